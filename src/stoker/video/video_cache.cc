#include "stoker/video/video_cache.h"

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <utility>

#include "stoker/video/saved_video_index.h"
#include "stoker/video/video_reference.h"

namespace stoker::video {
namespace {

struct Known {
  VideoStreamInfo stream;
  std::shared_ptr<const VideoIndex> index;
  size_t bytes = 0;    // what it holds, for the bound
  bool saved = false;  // read from the cache folder: indexed again where the bytes differ
};

struct KeyHash {
  size_t operator()(const VideoKey& k) const { return static_cast<size_t>(k.hash.low ^ k.size); }
};

// Least recently used first.
class VideoCache {
 public:
  const Known* find(const VideoKey& key) {
    const auto at = where_.find(key);
    if (at == where_.end()) return nullptr;
    order_.splice(order_.end(), order_, at->second);
    return &at->second->second;
  }

  // Keeps `known` as `key`'s, in place of what was kept.
  const Known& insert(const VideoKey& key, Known known) {
    if (const auto at = where_.find(key); at != where_.end()) drop(at->second);
    held_ += known.bytes;
    order_.emplace_back(key, std::move(known));
    where_[key] = std::prev(order_.end());
    while (held_ > kVideoCacheBytes && order_.size() > 1) drop(order_.begin());
    return order_.back().second;
  }

 private:
  using Entries = std::list<std::pair<VideoKey, Known>>;

  void drop(Entries::iterator at) {
    held_ -= at->second.bytes;
    where_.erase(at->first);
    order_.erase(at);
  }

  Entries order_;
  std::unordered_map<VideoKey, Entries::iterator, KeyHash> where_;
  size_t held_ = 0;
};

VideoCache& thread_cache() {
  thread_local VideoCache cache;
  return cache;
}

// `video` as this thread's cache keeps it (`saved`: read from the cache folder).
Known known_of(KnownVideo video, bool saved) {
  Known known;
  known.bytes = sizeof(Known) + video.index.pts.size() * (sizeof(int64_t) + 1) +
                static_cast<size_t>(video.stream.parameters->extradata_size);
  known.stream = std::move(video.stream);
  known.index = std::make_shared<const VideoIndex>(std::move(video.index));
  known.saved = saved;
  return known;
}

// What this thread, else `cache_dir`, keeps of `key` (kept by this thread from then on), or
// null.
const Known* find_known(const VideoKey& key, const std::string& cache_dir) {
  if (const Known* known = thread_cache().find(key)) return known;
  std::optional<KnownVideo> saved = load_known_video(cache_dir, key);
  if (!saved) return nullptr;
  return &thread_cache().insert(key, known_of(std::move(*saved), true));
}

// The index of `file`, opened unknown: a reference's mp4/mov from its sample tables (`file`
// opened again after), else read from every packet.
Result<VideoIndex> index_of(VideoFile& file, bool referenced, const VideoStreamInfo& stream) {
  if (!referenced) return read_video_index(file);
  std::optional<VideoIndex> tables = read_video_index_from_tables(file);
  // Opened again either way: the reader's buffer may hold the zeros of the tables' read.
  file.format.reset();
  file.io.reset();
  std::unique_ptr<VideoBytes> bytes = std::move(file.reader->bytes);
  if (!tables) {  // read from every packet
    STOKER_ASSIGN_OR_RETURN(file, open_video_bytes(std::move(bytes)));
    return read_video_index(file);
  }
  STOKER_ASSIGN_OR_RETURN(file, open_known_video_bytes(std::move(bytes), stream));
  return std::move(*tables);
}

// Opens `field`'s video unknown, reads its index and keeps both, in this thread and in
// `cache_dir`.
Result<IndexedVideo> open_and_keep(const VideoKey& key, ByteSpan field,
                                   const std::string& cache_dir) {
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<VideoBytes> bytes, video_field_bytes("", field));
  STOKER_ASSIGN_OR_RETURN(VideoFile file, open_video_bytes(std::move(bytes)));
  KnownVideo video;
  STOKER_ASSIGN_OR_RETURN(video.stream, stream_info_of(file));
  STOKER_ASSIGN_OR_RETURN(video.index, index_of(file, is_video_reference(field), video.stream));
  save_known_video(cache_dir, key, video);
  const Known& kept = thread_cache().insert(key, known_of(std::move(video), false));
  return IndexedVideo{std::move(file), kept.index};
}

}  // namespace

Result<IndexedVideo> open_indexed_video(ByteSpan bytes, const std::string& cache_dir) {
  const VideoKey key = video_key(bytes);
  if (const Known* known = find_known(key, cache_dir)) {
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<VideoBytes> read, video_field_bytes("", bytes));
    Result<VideoFile> file = open_known_video_bytes(std::move(read), known->stream);
    if (file.is_ok()) return IndexedVideo{std::move(file).value(), known->index};
    // A saved copy the bytes do not open as is indexed again (and replaced).
    if (!known->saved) return file.status();
  }
  return open_and_keep(key, bytes, cache_dir);
}

Result<std::shared_ptr<const VideoIndex>> indexed_video(ByteSpan bytes,
                                                        const std::string& cache_dir) {
  const VideoKey key = video_key(bytes);
  if (const Known* known = find_known(key, cache_dir)) return known->index;
  STOKER_ASSIGN_OR_RETURN(IndexedVideo opened, open_and_keep(key, bytes, cache_dir));
  return opened.index;
}

}  // namespace stoker::video
