#pragma once
// push_dataset: uploads a local dataset, or a folder of them (train/ and test/ as `convert`
// writes them), to an s3://bucket/prefix (docs/REMOTE-DESIGN.md, section 4), so that a reader
// of the URL never sees a half-uploaded version and readers of the previous one keep working:
//
// 1. Every dataset is verified first as `stoker verify` does (Dataset::open's checks, then every
//    record's checksum, layout and label); a bad one is refused before anything is sent.
// 2. Every shard goes up under a content-qualified name, `<stem>.<index_xxh3>.stk` (a name that
//    is one already is kept), beside the dataset's manifest: shard-00003.stk of index checksum
//    0x37c8c13198acad03 becomes shard-00003.37c8c13198acad03.stk. A name the previous version
//    uses is therefore never overwritten with other bytes. A shard already on the server under
//    its name with its size is not sent again: S3 makes an object visible only whole, and the
//    name fixes its records (the index checksum covers every record's offset, length and
//    checksum; readers check it and every record against the manifest anyway), so a rerun after
//    an interruption uploads only what is missing.
// 3. The manifests, naming those shards, go up last (each a single PUT: old or new, never half).
// 4. With `prune`, the objects ending in ".stk" directly beside a manifest that it does not name
//    are deleted (shards of older versions, of an interrupted push); nothing else ever is.
//    Readers still holding an older manifest then lose its shards.
//
// Errors are one line naming the file or URL, before any upload where they can be found then:
// those of check_push_target (an http(s):// URL, a missing bucket, a wrong key); no dataset at
// DIR; a folder of datasets (train/, test/) pushed where a single dataset's manifest.json is,
// which readers would go on reading; a dataset that fails
// verification; a shard over max_object_bytes (no multipart upload in v1); then the store's own
// (credentials, a missing bucket, the network), with the upload stopped there. Thread-compatible.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stoker/net/object_store.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/manifest.h"
#include "stoker/util/status.h"

namespace stoker::remote {

// The largest object one S3 PUT may write: 5 GiB.
constexpr uint64_t kMaxPutBytes = uint64_t{5} << 30;

struct PushOptions {
  bool prune = false;
  uint64_t max_object_bytes = kMaxPutBytes;  // a larger shard is refused
  // Polled before each upload; true stops the push (kCancelled) before its manifests, so the
  // URL still holds its previous version. Optional.
  std::function<bool()> stop_requested;
};

struct PushSummary {
  std::vector<std::string> datasets;  // the URLs written (redacted), one per dataset
  uint64_t records = 0;
  uint64_t shards = 0;          // named by the new manifests
  uint64_t uploaded = 0;        // of those, sent
  uint64_t uploaded_bytes = 0;  // their bytes
  uint64_t present = 0;         // of those, on the server already under their name
  uint64_t pruned = 0;          // shards deleted with `prune`
};

// `shard`'s name on the server: "<stem>.<index_xxh3 as 16 lower-case hex digits>.stk", the stem
// being its file name less a ".stk" ending; a name of that form for its own checksum as it is.
std::string content_qualified_name(const ShardInfo& shard);

// Whether a push to `url` through `store` can start: kUnsupported for an http(s):// URL;
// kNotFound for a missing bucket; the store's error if it refuses a HEAD of the bucket or of the
// manifest for another reason than its absence (a wrong key, no server). Run before a long
// conversion that ends in a push.
Status check_push_target(const RemoteUrl& url, const ObjectStore& store);

// Uploads the dataset(s) at `dir` through `store`, which writes under `url`, as described above.
Result<PushSummary> push_dataset(const std::string& dir, const RemoteUrl& url,
                                 const ObjectStore& store, const PushOptions& options = {});

}  // namespace stoker::remote
