#pragma once
// The index (`PREFIX.idx`) of Megatron-LM's indexed dataset (megatron/core/datasets/
// indexed_dataset.py, "MMIDIDX"), whose tokens are in `PREFIX.bin`. Its layout, little-endian:
// the magic "MMIDIDX\0\0" (9 bytes), the version (u64, 1), the tokens' dtype code (u8: 1 uint8,
// 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16), the sequence count S and
// the document count D (u64 each), then S sequence lengths in tokens (i32), S sequence pointers
// (i64: each sequence's byte offset in the .bin), D document indices (i64: the sequence each
// document starts at, from 0; the last is where the last document ends) and, for a multimodal
// dataset, S sequence modes (i8). A parser of untrusted bytes (fuzz/megatron_index_fuzz.cc):
// it reads the index in chunks, so its memory is the spans it finds, not the index's size, and
// checks every count against the index's size, every sequence against the .bin's size and
// every document index against its neighbours, before any arithmetic could overflow. Functions;
// thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stoker/store/import/token_layout.h"
#include "stoker/util/status.h"

namespace stoker {

// Bytes of the index's header: magic, version, dtype code and the two counts.
constexpr uint64_t kMegatronIndexHeaderBytes = 34;

struct MegatronIndex {
  // The tokens of every sequence in order, as one array (float dtypes are refused).
  TokenLayout layout;
  uint64_t sequences = 0;
  uint64_t documents = 0;  // the document indices less one (the first, 0, starts the first)
  // Where asked: each non-empty document's first token in the array, in order (from 0).
  std::vector<uint64_t> document_starts;
};

// `size` bytes of the index from byte `offset` (inside it): an error naming the file when they
// cannot be read.
using IndexRead = std::function<Result<std::string>(uint64_t offset, size_t size)>;

// The index `name` of `index_size` bytes, read through `read`, of the data file `bin_name` of
// `bin_size` bytes. kCorrupt in one line naming the index for any inconsistency (a wrong magic or
// version, an unknown or float dtype, counts the index's size cannot hold, a negative length, a
// sequence outside the .bin, document indices out of order or past the sequences); `read`'s
// errors as they are. `document_starts`: whether to list the documents' first tokens (a
// sequence's start kept per sequence while the index is read: 8 bytes each).
Result<MegatronIndex> parse_megatron_index(const std::string& name, uint64_t index_size,
                                           const IndexRead& read, const std::string& bin_name,
                                           uint64_t bin_size, bool document_starts = false);

// Whether `head` (an index's first bytes) starts with the magic "MMIDIDX\0\0".
bool has_megatron_magic(const std::string& head);

}  // namespace stoker
