#pragma once
// Where a token file's tokens lie: a flat array of integer token ids (nanoGPT's headerless `.bin`,
// a 1-D `.npy`, Megatron-LM's indexed dataset's `.bin`, megatron_index.h) as runs of tokens
// stored one after the other in the data file, and the tokens read from it checked and widened
// to int64.
// Little-endian files on a little-endian host. Plain data and functions; thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/record_views.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

// A token's type: a view's stored type (record_views.h), widened to int64.
using TokenType = StoredType;

// Bytes of one token of `type` (1 to 8).
size_t token_type_size(TokenType type);
// numpy's name of `type`: "uint16", "int32", ...
const char* token_type_name(TokenType type);
// The largest token id of `type` (int64's largest for the 8-byte types).
uint64_t token_type_max(TokenType type);

// `count` tokens stored one after the other from byte `offset` of data file `file`, the tokens
// [first, first + count) of the array. One data file (file 0) but for an Arrow column read in
// place (token_column.h), whose files' record batches follow one another.
struct TokenSpan {
  uint64_t offset = 0;
  uint64_t first = 0;
  uint64_t count = 0;
  uint32_t file = 0;
};

struct TokenLayout {
  TokenType type = TokenType::kUint16;
  std::vector<TokenSpan> spans;  // in token order, none empty, each following the last
  uint64_t tokens = 0;           // the array's length: the spans' counts summed

  // Appends `count` tokens stored at byte `offset` of data file `file` (none: nothing), merged
  // into the last span where they follow it in the same file.
  void append(uint64_t offset, uint64_t count, uint32_t file = 0);
};

// A headerless file of `size` bytes of tokens of `type` (nanoGPT's `.bin`): kCorrupt naming
// file `name` when its size is no whole number of tokens.
Result<TokenLayout> raw_token_layout(const std::string& name, uint64_t size, TokenType type);

// The .npy file `name` of `size` bytes whose first bytes are `head` (at least its header's,
// npy_header_size): a 1-D C-order array of uint16, uint32, int32, int64 or uint64 (little-endian)
// or uint8, its data the rest of the file. kCorrupt in one line naming the file otherwise.
Result<TokenLayout> npy_token_layout(const std::string& name, ByteSpan head, uint64_t size);

// A token that is no token id (negative, or 2^63 and above): its index among those widened and
// its value as text.
struct BadToken {
  size_t at = 0;
  std::string value;
};

// Whether a token of `type` may be no token id (a signed type, or uint64): only those are checked.
bool token_type_checked(TokenType type);
// The first of the `n` tokens of `type` at `bytes` that is no token id, or nullopt when all are.
std::optional<BadToken> find_bad_token(TokenType type, const uint8_t* bytes, size_t n);
// The `n` tokens of `type` at `bytes` widened into `out`: the first that is no token id, or
// nullopt when all are (then all are written).
std::optional<BadToken> widen_tokens(TokenType type, const uint8_t* bytes, size_t n, int64_t* out);

}  // namespace stoker
