#pragma once
// A remote object's store and its download into the cache: store_of(url) opens the store of a
// URL's folder as the process's environment configures it; download_from is the ShardDownload
// (cache/shard_cache.h) that GETs an object of a store into the cache's preallocated .part file,
// refusing bytes past the size the cache expects: a dataset's shard (named by its manifest) or a
// tar read in place (named by its URL, only while it keeps the ETag it was listed with).
// Thread-safe.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stoker/cache/shard_cache.h"
#include "stoker/net/object_store.h"
#include "stoker/store/in_place_files.h"

namespace stoker::remote {

// The client and the store of `url`, credentials and retry limits (STOKER_RETRY_SECONDS)
// from the process's environment.
Result<std::shared_ptr<const ObjectStore>> store_of(const RemoteUrl& url);

// GETs object `info.file` of `store` into the file `fd` (preallocated to `info.bytes`): kCorrupt
// naming its URL when it sends more or fewer bytes; with `if_match`, only while the object
// keeps that ETag (else kCorrupt: it changed on the server); the download's `cancelled` turning
// true ends it (kCancelled). The bytes go to `at` of the file and on (`info.bytes` of them: one
// object of several in a file).
ShardDownload download_from(std::shared_ptr<const ObjectStore> store, std::string if_match = "",
                            uint64_t at = 0);

// Writes `size` bytes at `data` to `at` of the place they go (a file, a buffer).
using RangeWriter = std::function<Status(uint64_t at, const char* data, size_t size)>;

// At most this many bytes between two ranges asked together are read and dropped rather than
// asked in a GET of their own (a round trip costs more; Arrow's read coalescing alike).
inline constexpr uint64_t kCoalesceGap = uint64_t{256} << 10;

// GETs `ranges` of object `name` of `store`, `object_size` bytes long, only while it keeps the
// ETag `if_match`, through `write` at their places one after the other (the first range at 0);
// ranges at most kCoalesceGap apart in one GET.
// Every error is one line naming the object's URL and `what` ("row group 3"): kCorrupt when a
// range comes back as the whole object (status 200, not 206), with fewer bytes than asked, or
// of an object of another size; get's errors (a 412: the object changed; `cancelled` turning
// true: kCancelled).
Status get_ranges(const ObjectStore& store, const std::string& name, uint64_t object_size,
                  const std::vector<FileRange>& ranges, const std::string& if_match,
                  const std::string& what, const RangeWriter& write,
                  const std::function<bool()>& cancelled = nullptr);

// A RangeWriter into the open file `fd`; errors name `what`.
RangeWriter file_writer(int fd, std::string what);

}  // namespace stoker::remote
