#include "stoker/store/import/megatron_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace stoker {
namespace {

constexpr char kMegatronMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
// Entries of the index read at once.
constexpr uint64_t kChunkEntries = uint64_t{1} << 16;

template <typename T>
T load_le(const std::string& bytes, size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

// The token type of dtype code `code`, or an error's reason.
Result<TokenType> token_type_of(uint8_t code) {
  switch (code) {
    case 1:
      return TokenType::kUint8;
    case 2:
      return TokenType::kInt8;
    case 3:
      return TokenType::kInt16;
    case 4:
      return TokenType::kInt32;
    case 5:
      return TokenType::kInt64;
    case 6:
    case 7:
      return corrupt(fmt::format("dtype code {} ({}): not integer token ids", code,
                                 code == 6 ? "float64" : "float32"));
    case 8:
      return TokenType::kUint16;
    default:
      return corrupt(fmt::format("dtype code {}, not one of Megatron-LM's (1 to 8)", code));
  }
}

}  // namespace

bool has_megatron_magic(const std::string& head) {
  return head.size() >= sizeof kMegatronMagic &&
         std::memcmp(head.data(), kMegatronMagic, sizeof kMegatronMagic) == 0;
}

Result<MegatronIndex> parse_megatron_index(const std::string& name, uint64_t index_size,
                                           const IndexRead& read, const std::string& bin_name,
                                           uint64_t bin_size, bool document_starts) {
  auto refused = [&](const std::string& why) {
    return corrupt(fmt::format("{}: not a Megatron-LM index stoker reads: {}", name, why));
  };
  if (index_size < kMegatronIndexHeaderBytes)
    return refused(fmt::format("{} bytes, fewer than its {}-byte header", index_size,
                               kMegatronIndexHeaderBytes));
  // Bytes [at, at + n) of the index, all of them.
  auto read_exactly = [&](uint64_t at, uint64_t n) -> Result<std::string> {
    STOKER_ASSIGN_OR_RETURN(std::string bytes, read(at, n));
    if (bytes.size() != n) return refused(fmt::format("bytes [{}, {}) read short", at, at + n));
    return bytes;
  };
  STOKER_ASSIGN_OR_RETURN(std::string header, read_exactly(0, kMegatronIndexHeaderBytes));
  if (!has_megatron_magic(header)) return refused("it does not start with MMIDIDX");
  if (const uint64_t version = load_le<uint64_t>(header, 9); version != 1)
    return refused(fmt::format("version {}, not 1", version));
  Result<TokenType> type = token_type_of(load_le<uint8_t>(header, 17));
  if (!type.is_ok()) return refused(type.status().message());
  MegatronIndex index;
  index.layout.type = type.value();
  const uint64_t sequences = load_le<uint64_t>(header, 18);
  const uint64_t documents = load_le<uint64_t>(header, 26);
  // Each sequence takes 12 bytes (length and pointer), each document index 8: checked by
  // division, so that no product overflows.
  const uint64_t body = index_size - kMegatronIndexHeaderBytes;
  if (sequences > body / 12)
    return refused(fmt::format("{} sequences, more than its {} bytes hold", sequences, index_size));
  const uint64_t after_sequences = body - 12 * sequences;
  if (documents > after_sequences / 8)
    return refused(fmt::format("{} sequences and {} document indices, more than its {} bytes hold",
                               sequences, documents, index_size));
  const uint64_t rest = after_sequences - 8 * documents;
  if (rest != 0 && rest != sequences)
    return refused(
        fmt::format("{} bytes after its document indices, neither none nor a mode per "
                    "sequence ({})",
                    rest, sequences));
  if (documents == 0) return refused("no document index (the first, 0, is always written)");
  const uint64_t lengths_at = kMegatronIndexHeaderBytes;
  const uint64_t pointers_at = lengths_at + 4 * sequences;
  const uint64_t documents_at = pointers_at + 8 * sequences;
  const uint64_t item = token_type_size(index.layout.type);
  // Each sequence's first token in the array, then the tokens' count: where asked.
  std::vector<uint64_t> sequence_starts;
  // Lengths and pointers read chunk by chunk side by side: a chunk of lengths, then its pointers.
  for (uint64_t first = 0; first < sequences; first += kChunkEntries) {
    const uint64_t n = std::min(kChunkEntries, sequences - first);
    STOKER_ASSIGN_OR_RETURN(std::string lengths, read_exactly(lengths_at + 4 * first, 4 * n));
    STOKER_ASSIGN_OR_RETURN(std::string pointers, read_exactly(pointers_at + 8 * first, 8 * n));
    for (uint64_t k = 0; k < n; ++k) {
      const int32_t length = load_le<int32_t>(lengths, 4 * k);
      const int64_t pointer = load_le<int64_t>(pointers, 8 * k);
      if (length < 0) return refused(fmt::format("sequence {}: a length of {}", first + k, length));
      const uint64_t bytes = static_cast<uint64_t>(length) * item;  // below 2^34
      if (pointer < 0 || static_cast<uint64_t>(pointer) > bin_size ||
          bytes > bin_size - static_cast<uint64_t>(pointer))
        return refused(
            fmt::format("sequence {}: {} tokens at byte {}, past the end of {} ({} bytes)",
                        first + k, length, pointer, bin_name, bin_size));
      if (document_starts) sequence_starts.push_back(index.layout.tokens);
      index.layout.append(static_cast<uint64_t>(pointer), static_cast<uint64_t>(length));
    }
  }
  if (document_starts) sequence_starts.push_back(index.layout.tokens);
  index.sequences = sequences;
  // Document indices: from 0, never decreasing, at most the sequence count.
  int64_t previous = 0;
  for (uint64_t first = 0; first < documents; first += kChunkEntries) {
    const uint64_t n = std::min(kChunkEntries, documents - first);
    STOKER_ASSIGN_OR_RETURN(std::string chunk, read_exactly(documents_at + 8 * first, 8 * n));
    for (uint64_t k = 0; k < n; ++k) {
      const int64_t value = load_le<int64_t>(chunk, 8 * k);
      const uint64_t j = first + k;
      if (value < previous || static_cast<uint64_t>(value) > sequences || (j == 0 && value != 0))
        return refused(fmt::format("document index {} is {}, not in [{}, {}]", j, value, previous,
                                   j == 0 ? 0 : sequences));
      previous = value;
      // A document's start, where it holds tokens (an empty one, or the end, starts none).
      const uint64_t start = document_starts ? sequence_starts[static_cast<uint64_t>(value)] : 0;
      if (document_starts && start < index.layout.tokens &&
          (index.document_starts.empty() || index.document_starts.back() != start))
        index.document_starts.push_back(start);
    }
  }
  index.documents = documents - 1;
  return index;
}

}  // namespace stoker
