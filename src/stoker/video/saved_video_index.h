#pragma once
// What opening a video learns (video_cache.h: the container's format, the video stream chosen,
// its parameters and the frame index), kept in a cache folder between runs, as tars' indexes
// are: CACHE_DIR/video-indexes/KEY[0:3]/KEY.index, one file per video, named by the XXH3-128
// and the size of its bytes. The bytes are the video's identity, wherever they come from (a file of
// a folder, a dataset's record, a tar's member, a Parquet row): a video changed in any way, its
// size and time kept or not, is another key, indexed anew; nothing is keyed by a path.
//
// The saved form (util/saved_form.h's seal) is versioned by its magic and holds the libavformat
// and libavcodec versions that read it, then its key, then the stream and the index. A file that
// is not whole, of another version or FFmpeg, of another key, or whose contents break what an
// opening guarantees (a known container and video decoder, timestamps increasing, the first
// frame a keyframe, sizes and enumerations in range) is not read: the caller indexes the video
// again and replaces it. Written atomically (a temporary name, fsync'ed, renamed: contract 7),
// best effort, as a cache is; the least recently used deleted past the folder's bound
// (saved_video_bound.h). Functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string>

#include "stoker/util/byte_span.h"
#include "stoker/util/checksum.h"
#include "stoker/util/status.h"
#include "stoker/video/video_file.h"
#include "stoker/video/video_index.h"

namespace stoker::video {

// A video's bytes as a key: their XXH3-128 and their size.
struct VideoKey {
  Hash128 hash;
  uint64_t size = 0;
  bool operator==(const VideoKey& o) const { return hash == o.hash && size == o.size; }
};
VideoKey video_key(ByteSpan bytes);

// What a later opening of the same bytes is given (open_known_video_bytes) and their index.
struct KnownVideo {
  VideoStreamInfo stream;
  VideoIndex index;
};

// The saved form of `known`, the video of `key`; and back: kCorrupt naming what is wrong for
// bytes that are not a whole saved form of `key` (a parser of the cache's bytes).
std::string encode_known_video(const VideoKey& key, const KnownVideo& known);
Result<KnownVideo> decode_known_video(ByteSpan bytes, const VideoKey& key);

// CACHE_DIR/video-indexes/KEY[0:3]/KEY.index: the file kept for the video of `key`.
std::string saved_video_file(const std::string& cache_dir, const VideoKey& key);

// The video of `key` as `cache_dir` keeps it (its use recorded: saved_video_bound.h), or nullopt
// where it keeps none that is whole.
std::optional<KnownVideo> load_known_video(const std::string& cache_dir, const VideoKey& key);

// Keeps `known`, the video of `key`, in `cache_dir` (replacing what is there; best effort), the
// folder kept within its bound (saved_video_bound.h).
void save_known_video(const std::string& cache_dir, const VideoKey& key, const KnownVideo& known);

}  // namespace stoker::video
