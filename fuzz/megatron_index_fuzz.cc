// libFuzzer target for token files' layouts (store/import/megatron_index.h, token_layout.h).
// An input is a data file's size (its first 8 bytes) and a Megatron-LM index (the rest); the
// same bytes are also read as a .npy token array and widened as tokens of each type. For each:
// the index either parses, its spans inside the data file, in token order, adding up to its
// tokens, or is refused with kCorrupt in one line naming it; the .npy likewise. Any violation is
// a __builtin_trap(); ASan and UBSan report the rest. docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "stoker/store/import/megatron_index.h"
#include "stoker/store/import/npy_header.h"
#include "stoker/store/import/token_layout.h"

namespace {

using namespace stoker;
using fuzz::check;

// A refusal: kCorrupt, one line, naming `name` first.
void check_refusal(const Status& status, const std::string& name) {
  check(status.code() == StatusCode::kCorrupt);
  check(status.message().rfind(name + ": ", 0) == 0);
  check(status.message().find('\n') == std::string::npos);
}

// The spans of `layout` lie in a file of `size` bytes, in token order, adding up to its tokens.
void check_layout(const TokenLayout& layout, uint64_t size) {
  const uint64_t item = token_type_size(layout.type);
  uint64_t next = 0;
  for (const TokenSpan& span : layout.spans) {
    check(span.count > 0 && span.first == next);
    check(span.offset <= size && span.count <= (size - span.offset) / item);
    next += span.count;
  }
  check(next == layout.tokens);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t bin_size = 0;
  std::memcpy(&bin_size, data, 8);
  const std::string index(reinterpret_cast<const char*>(data) + 8, size - 8);
  const IndexRead read = [&](uint64_t at, size_t n) -> Result<std::string> {
    check(at <= index.size() && n <= index.size() - at);
    return index.substr(at, n);
  };
  const Result<MegatronIndex> parsed =
      parse_megatron_index("i.idx", index.size(), read, "i.bin", bin_size);
  if (parsed.is_ok()) {
    check_layout(parsed.value().layout, bin_size);
    check(parsed.value().sequences <= (index.size() - kMegatronIndexHeaderBytes) / 12);
    check(parsed.value().documents < (index.size() - kMegatronIndexHeaderBytes) / 8);
  } else {
    check_refusal(parsed.status(), "i.idx");
  }
  const ByteSpan file{data, size};
  const Result<TokenLayout> npy = npy_token_layout("t.npy", {data, npy_header_size(file)}, size);
  if (npy.is_ok()) {
    check_layout(npy.value(), size);
  } else {
    check_refusal(npy.status(), "t.npy");
  }
  std::vector<int64_t> out(size);
  for (TokenType type :
       {TokenType::kUint8, TokenType::kInt8, TokenType::kUint16, TokenType::kInt16,
        TokenType::kUint32, TokenType::kInt32, TokenType::kInt64, TokenType::kUint64}) {
    const size_t n = size / token_type_size(type);
    const std::optional<BadToken> bad = widen_tokens(type, data, n, out.data());
    if (bad) check(bad->at < n && !bad->value.empty() && bad->value[0] != '0');
    for (size_t i = 0; i < (bad ? bad->at : n); ++i) check(out[i] >= 0);
  }
  return 0;
}
