#include "stoker/video/clips_per_video.h"

#include <cstdio>

namespace stoker::video {

std::optional<ClipsPerVideo> ClipsPerVideo::from_text(const std::string& text) {
  long long count = 0;
  int end = 0;
  if (std::sscanf(text.c_str(), "clips_per_video(%lld)%n", &count, &end) != 1 ||
      static_cast<size_t>(end) != text.size() || count < 1)
    return std::nullopt;
  const ClipsPerVideo clips{count};
  if (clips.text() != text) return std::nullopt;
  return clips;
}

}  // namespace stoker::video
