#include "stoker/video/video_cache.h"

#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>

#include "stoker/util/checksum.h"

namespace stoker::video {
namespace {

struct Known {
  VideoStreamInfo stream;
  std::shared_ptr<const VideoIndex> index;
  size_t bytes = 0;  // what it holds, for the bound
};

struct Key {
  uint64_t hash = 0;
  size_t size = 0;
  bool operator==(const Key& o) const { return hash == o.hash && size == o.size; }
};
struct KeyHash {
  size_t operator()(const Key& k) const { return static_cast<size_t>(k.hash ^ k.size); }
};

// Least recently used first.
class VideoCache {
 public:
  const Known* find(const Key& key) {
    const auto at = where_.find(key);
    if (at == where_.end()) return nullptr;
    order_.splice(order_.end(), order_, at->second);
    return &at->second->second;
  }

  const Known& insert(const Key& key, Known known) {
    held_ += known.bytes;
    order_.emplace_back(key, std::move(known));
    where_[key] = std::prev(order_.end());
    while (held_ > kVideoCacheBytes && order_.size() > 1) {
      held_ -= order_.front().second.bytes;
      where_.erase(order_.front().first);
      order_.pop_front();
    }
    return order_.back().second;
  }

 private:
  std::list<std::pair<Key, Known>> order_;
  std::unordered_map<Key, std::list<std::pair<Key, Known>>::iterator, KeyHash> where_;
  size_t held_ = 0;
};

VideoCache& thread_cache() {
  thread_local VideoCache cache;
  return cache;
}

Key key_of(ByteSpan bytes) { return Key{xxh3_64(bytes.data, bytes.size), bytes.size}; }

// Opens `bytes` unknown, reads its index and keeps both.
Result<IndexedVideo> open_and_keep(const Key& key, ByteSpan bytes) {
  STOKER_ASSIGN_OR_RETURN(VideoFile file, open_video_bytes("", bytes));
  Known known;
  STOKER_ASSIGN_OR_RETURN(known.stream, stream_info_of(file));
  STOKER_ASSIGN_OR_RETURN(VideoIndex index, read_video_index(file));
  known.bytes = sizeof(Known) + index.pts.size() * (sizeof(int64_t) + 1) +
                static_cast<size_t>(known.stream.parameters->extradata_size);
  known.index = std::make_shared<const VideoIndex>(std::move(index));
  const Known& kept = thread_cache().insert(key, std::move(known));
  return IndexedVideo{std::move(file), kept.index};
}

}  // namespace

Result<IndexedVideo> open_indexed_video(ByteSpan bytes) {
  const Key key = key_of(bytes);
  const Known* known = thread_cache().find(key);
  if (known == nullptr) return open_and_keep(key, bytes);
  STOKER_ASSIGN_OR_RETURN(VideoFile file, open_known_video_bytes("", bytes, known->stream));
  return IndexedVideo{std::move(file), known->index};
}

Result<std::shared_ptr<const VideoIndex>> indexed_video(ByteSpan bytes) {
  const Key key = key_of(bytes);
  if (const Known* known = thread_cache().find(key)) return known->index;
  STOKER_ASSIGN_OR_RETURN(IndexedVideo opened, open_and_keep(key, bytes));
  return opened.index;
}

}  // namespace stoker::video
