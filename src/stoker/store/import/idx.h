#pragma once
// IDX importer: the MNIST family's file format (big-endian header: two zero bytes, a type
// byte, a dimension count, then u32 dimensions; then the data). Files may be gzip-compressed
// or raw; both are read through zlib. Only unsigned-byte (0x08) data is accepted, which covers
// MNIST, Fashion-MNIST, KMNIST and EMNIST.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

struct IdxImportOptions {
  std::string images;  // IDX file of N images (N, rows, cols), uint8
  std::string labels;  // IDX file of N labels (N), uint8
  std::string out;     // dataset directory to create; must not exist
  uint64_t shard_bytes = uint64_t{256} << 20;
  std::vector<std::string> class_names;  // recorded in the manifest if given
  // Polled before each record; true stops the import (kCancelled, nothing left). Optional.
  std::function<bool()> stop_requested;
};

// Converts an images/labels pair into a dataset with fields
//   image: uint8 [1, rows, cols]   label: int64 scalar
// Returns the number of records written. Nothing is left at `out` on failure. The inputs are
// streamed record by record: memory stays bounded by one record and the shard writer's
// buffers, whatever their size, and nothing is allocated on a header's word alone. Errors name
// the file: missing or not a regular file, bad magic, unsupported type, dimensions that do not
// fit the schema, truncated (the header promises more than the file holds), trailing bytes,
// corrupt gzip.
Result<uint64_t> import_idx(const IdxImportOptions& options);

// The manifest's `source` of a dataset import_idx(options) writes: "IMAGES + LABELS".
std::string idx_source(const IdxImportOptions& options);

}  // namespace stoker
