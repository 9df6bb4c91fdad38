#pragma once
// What opening a record's video learns, kept per thread for the next clip of the same video and
// in the cache folder for later runs (issue 63: a video's index is read on its first open and
// kept): keyed by the bytes' XXH3-128 and size (a changed video is another key), the container's
// format, the video stream chosen and its parameters (video_file.h's VideoStreamInfo) and its
// VideoIndex. A later open of the same bytes, in this run or (from the cache folder:
// saved_video_index.h) a later one, is not probed, reads no stream information and no packets
// for the index; the decoder is made from the same parameters, so the frames are the same. A
// saved copy that is damaged, or that the bytes do not open as it says, is indexed again and
// replaced. Each thread's cache holds at most kVideoCacheBytes (index and parameters), the least
// recently used dropped first. One per thread: no locking (the folder's files are replaced
// atomically).

#include <cstddef>
#include <memory>
#include <string>

#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"
#include "stoker/video/video_file.h"
#include "stoker/video/video_index.h"

namespace stoker::video {

inline constexpr size_t kVideoCacheBytes = size_t{32} << 20;

// A record's video opened, and its index (shared with the cache).
struct IndexedVideo {
  VideoFile file;
  std::shared_ptr<const VideoIndex> index;
};

// Opens the video in `bytes` (a record's, named in errors by the loader; a reference's read by
// ranges, its first open of an mp4/mov reading its index from the header's tables alone:
// video_index.h) and gives its index:
// from this thread's cache where the same bytes were opened before, else from `cache_dir`'s
// saved copy, else read and kept in both ("": in this thread's only).
Result<IndexedVideo> open_indexed_video(ByteSpan bytes, const std::string& cache_dir);

// The index alone (nothing opened where a cache has it).
Result<std::shared_ptr<const VideoIndex>> indexed_video(ByteSpan bytes,
                                                        const std::string& cache_dir);

}  // namespace stoker::video
