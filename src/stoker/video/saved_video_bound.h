#pragma once
// The bound on the videos' indexes a cache folder keeps (CACHE_DIR/video-indexes/:
// saved_video_index.h), as the shard cache and the transcode cache are bounded: at most the
// loader's cache_gb, or, where it is 0, half the cache file system's free space plus what the
// folder holds (cache/data_access.h's rule; util/saved_form.h's saved_form_bound). An index's use
// is its file's mtime, set when it is written and touched each time it is read, so that the order
// holds across processes and runs; the least recently used go first.
//
// A process counts the folder's bytes on its first save there and adds its own saves; when the
// count passes the bound it lists the folder again (counting what other processes wrote and
// deleted) and deletes the least recently used until the folder holds 7/8 of the bound, so that
// the next listing waits for an eighth of it. The folder passes its bound by at most what other
// processes saved since their last listing.
//
// Processes may share the folder: an index is written whole under a temporary name and renamed
// (a reader never sees half a file; a listing counts no temporary), read whole at once, and
// deleted by unlinking it (a reader that opened it reads it all the same). An index deleted
// while a loader uses it stays in each worker's memory (video_cache.h); the next opening that
// finds it gone indexes the video again and saves it again. Functions; thread-safe.

#include <cstdint>
#include <string>

namespace stoker::video {

// Counts a save of `bytes` into `cache_dir`'s folder, evicting as above where it passes the
// bound (saved_form_bound(cache_dir)).
void count_saved_video(const std::string& cache_dir, uint64_t bytes);

// Records a use of the saved index `path`: its mtime set to now.
void touch_saved_video(const std::string& path);

// Deletes `cache_dir`'s saved indexes, least recently used first (by mtime, then by name), until
// they hold at most `keep_bytes`; gives the bytes they hold then.
uint64_t evict_saved_videos(const std::string& cache_dir, uint64_t keep_bytes);

}  // namespace stoker::video
