#include "stoker/video/video_reference.h"

#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "stoker/util/saved_form.h"

namespace stoker::video {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'K', 'V', 'R', 'E', 'F', '1'};

struct Openers {
  std::mutex mutex;
  std::map<std::string, ReferenceOpener> by_source;
};

Openers& openers() {
  static Openers* registry = new Openers;  // never destroyed: used until the process ends
  return *registry;
}

}  // namespace

std::string encode_video_reference(const VideoReference& reference) {
  std::string body;
  put_text(body, reference.source);
  put_text(body, reference.name);
  put_text(body, reference.url);
  put_u64(body, reference.size);
  put_text(body, reference.etag);
  put_text(body, reference.version);
  return seal(kMagic, body);
}

bool is_video_reference(ByteSpan bytes) {
  return bytes.size >= sizeof(kMagic) && std::memcmp(bytes.data, kMagic, sizeof(kMagic)) == 0;
}

Result<VideoReference> decode_video_reference(ByteSpan bytes) {
  const std::optional<ByteSpan> body = unseal(bytes, kMagic);
  VideoReference r;
  if (body) {
    SavedReader in(*body);
    if (in.text(r.source) && in.text(r.name) && in.text(r.url) && in.u64(r.size) &&
        in.text(r.etag) && in.text(r.version) && in.done())
      return r;
  }
  return corrupt("a damaged reference to a remote video");
}

void register_reference_opener(const std::string& source, ReferenceOpener opener) {
  Openers& all = openers();
  std::lock_guard<std::mutex> lock(all.mutex);
  all.by_source[source] = std::move(opener);
}

Result<std::unique_ptr<VideoBytes>> open_video_reference(const VideoReference& reference) {
  ReferenceOpener opener;
  {
    Openers& all = openers();
    std::lock_guard<std::mutex> lock(all.mutex);
    const auto at = all.by_source.find(reference.source);
    if (at != all.by_source.end()) opener = at->second;
  }
  if (!opener)
    return unsupported(reference.url + ": a remote video whose folder was not opened here");
  return opener(reference);
}

Result<std::unique_ptr<VideoBytes>> video_field_bytes(const std::string& name, ByteSpan field) {
  if (!is_video_reference(field)) return memory_video_bytes(name, field);
  STOKER_ASSIGN_OR_RETURN(const VideoReference reference, decode_video_reference(field));
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<VideoBytes> remote, open_video_reference(reference));
  return blocked_video_bytes(std::move(remote), kRemoteBlockBytes, kRemoteBlocksKept);
}

}  // namespace stoker::video
