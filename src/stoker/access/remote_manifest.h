#pragma once
// A remote dataset's manifest, fetched through its folder of the shard cache
// (docs/REMOTE-DESIGN.md section 3, "Invalidation"): the GET sends If-None-Match with the ETag
// of the version last fetched; a 304 reuses that version, a 200 is a new one. Each version is
// kept as DIR/manifest-<xxh3>.json (XXH3-64 of its bytes, hex), and DIR/source.json names the
// dataset's redacted URL, the current version's ETag and XXH3. The manifest is parsed with
// Manifest::load's checks, errors naming its URL. Thread-compatible; processes sharing the
// folder replace its files atomically.

#include <cstdint>
#include <string>

#include "stoker/net/object_store.h"
#include "stoker/store/manifest.h"

namespace stoker::remote {

struct RemoteManifest {
  Manifest manifest;
  std::string etag;      // the server's, "" if it sent none
  uint64_t xxh3 = 0;     // of the manifest's bytes
  bool changed = false;  // a version other than the one the folder held (or the first)
};

// The manifest of the dataset `store` reads, through the cache folder `dir` (made if missing).
// Errors: the GET's (kNotFound when there is no manifest); kInvalidArgument for one over
// kMaxManifestBytes; Manifest::parse's, naming the manifest's URL; kIoError naming a file of
// `dir` that cannot be written.
Result<RemoteManifest> fetch_manifest(const ObjectStore& store, const std::string& source,
                                      const std::string& dir);

}  // namespace stoker::remote
