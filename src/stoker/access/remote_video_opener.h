#pragma once
// A remote video folder's videos read by ranges (issue 63): each record's video field holds a
// reference (video/video_reference.h: the folder's URL, the video's name, URL, size and ETag or
// other version, from the listing; nothing downloaded at open), and the folder's store is
// registered as the opener of its references, so that decode_clip reads a video's header and the
// GOPs its clips need by ranged GETs (video/video_reference.h's blocks), not the whole file. Each
// GET asks for the listed ETag (If-Match), or, where the listing gave none, checks the size the
// server gives (and asks the ETag its first GET gave of an open's later GETs): a video changed
// since the listing fails its read with one line naming its URL.
//
// The blocks fetched are kept in the remote cache (cache/shard_cache.h's objects, as a Parquet
// file's pieces: its folder, budget, least-recently-used eviction and cross-process flocks), each
// block an object named by the video's URL, its version (ETag, or the listing's other version)
// and size, and the block's index: a later read of a block (a later epoch, another process, a
// later run) reads the disk, and a video changed on the server is another name, never stale
// blocks. A block the budget cannot hold beside what is pinned is read without being kept.
// Granularity, by measurement (docs/BENCHMARKS.md, "Video folders over HTTP"): a block a file,
// an object of the cache as a Parquet file's pieces are, so that admission, eviction and the
// budget are the cache's own; one sparse file per video would charge the budget its whole size
// (the cache counts file sizes) where a clip of a 4.5 MB video reads a fifth of it. The cost:
// each admission reads the cache's ledger (cache/cache_ledger.h), not its listing, and the
// blocks are sealed objects (ObjectCheck::kSealed: each ends with its XXH3, checked when a
// video's open first finds it, instead of two fsyncs an admission, which cost 0.5 to 15 ms while
// the disk was busy): about 0.2 ms an admission at any number of files cached on a 2-core
// machine, and 30 us to check a block (docs/BENCHMARKS.md, "The remote cache's admissions").
// Thread-safe (functions).

#include <memory>
#include <string>
#include <vector>

#include "stoker/access/remote_files.h"
#include "stoker/cache/shard_cache.h"
#include "stoker/util/status.h"

namespace stoker::remote {

// The references of `files`, the videos listed in the folder `location` (its redacted URL), the
// folder's store registered as their opener, their blocks kept in `cache`; a file the listing
// could not size is its error.
std::vector<Result<std::string>> remote_video_references(const std::string& location,
                                                         const std::vector<ListedFile>& files,
                                                         std::shared_ptr<ShardCache> cache);

}  // namespace stoker::remote
