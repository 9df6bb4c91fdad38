#pragma once
// Megatron-LM index files (`.idx`, store/import/megatron_index.h) built byte by byte as its
// _IndexWriter writes them: the magic, the version, the dtype code, the sequence and document
// counts, then the lengths, pointers and document indices. The token source's tests and the
// index fuzz target's seeds. Test-only.

#include <cstdint>
#include <string>
#include <vector>

namespace stoker::testing {

// `value`'s bytes appended to `out`, little-endian (the host's).
template <typename T>
void append_le(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

inline std::string megatron_index_bytes(uint8_t code, const std::vector<int32_t>& lengths,
                                        const std::vector<int64_t>& pointers,
                                        const std::vector<int64_t>& documents,
                                        uint64_t version = 1) {
  std::string out("MMIDIDX\0\0", 9);
  append_le<uint64_t>(out, version);
  append_le<uint8_t>(out, code);
  append_le<uint64_t>(out, lengths.size());
  append_le<uint64_t>(out, documents.size());
  for (int32_t v : lengths) append_le(out, v);
  for (int64_t v : pointers) append_le(out, v);
  for (int64_t v : documents) append_le(out, v);
  return out;
}

}  // namespace stoker::testing
