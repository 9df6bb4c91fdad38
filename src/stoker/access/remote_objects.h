#pragma once
// A remote object's store and its download into the cache: store_of(url) opens the store of a
// URL's folder as the process's environment configures it; download_from is the ShardDownload
// (cache/shard_cache.h) that GETs an object of a store into the cache's preallocated .part file,
// refusing bytes past the size the cache expects: a dataset's shard (named by its manifest) or a
// tar read in place (named by its URL, only while it keeps the ETag it was listed with).
// Thread-safe.

#include <atomic>
#include <memory>
#include <string>

#include "stoker/cache/shard_cache.h"
#include "stoker/net/object_store.h"

namespace stoker::remote {

// The client and the store of `url`, credentials and retry limits (STOKER_RETRY_SECONDS)
// from the process's environment.
Result<std::shared_ptr<const ObjectStore>> store_of(const RemoteUrl& url);

// GETs object `info.file` of `store` into the file `fd` (preallocated to `info.bytes`): kCorrupt
// naming its URL when it sends more or fewer bytes; with `if_match`, only while the object
// keeps that ETag (else kCorrupt: it changed on the server).
// `cancel` (optional, outliving the download) turning true ends it (kCancelled).
ShardDownload download_from(std::shared_ptr<const ObjectStore> store, std::string if_match = "",
                            const std::atomic<bool>* cancel = nullptr);

}  // namespace stoker::remote
