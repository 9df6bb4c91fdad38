#pragma once
// IDX importer: the MNIST family's file format (big-endian header: two zero bytes, a type
// byte, a dimension count, then u32 dimensions; then the data). Files may be gzip-compressed
// or raw; both are read through zlib. Only unsigned-byte (0x08) data is accepted, which covers
// MNIST, Fashion-MNIST, KMNIST and EMNIST.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// The contents of one IDX file.
struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;  // product(dims) bytes, row-major
};

// Reads an IDX file; errors name the file (missing, bad magic, unsupported type, truncated,
// trailing bytes, corrupt gzip).
Result<IdxArray> read_idx(const std::string& path);

struct IdxImportOptions {
  std::string images;  // IDX file of N images (N, rows, cols), uint8
  std::string labels;  // IDX file of N labels (N), uint8
  std::string out;     // dataset directory to create; must not exist
  uint64_t shard_bytes = uint64_t{256} << 20;
  std::vector<std::string> class_names;  // recorded in the manifest if given
};

// Converts an images/labels pair into a dataset with fields
//   image: uint8 [1, rows, cols]   label: int64 scalar
// Returns the number of records written. Nothing is left at `out` on failure.
Result<uint64_t> import_idx(const IdxImportOptions& options);

}  // namespace stoker
