#include "stoker/store/import/token_layout.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "stoker/store/import/npy_header.h"

namespace stoker {
namespace {

// Each token type's size, numpy name and .npy descr (numpy writes little-endian ones with '<',
// single bytes with '|'), in TokenType's order.
struct TokenTypeInfo {
  TokenType type;
  size_t size;
  const char* name;
  const char* descr;
};
constexpr TokenTypeInfo kTokenTypes[] = {
    {TokenType::kUint8, 1, "uint8", "|u1"},   {TokenType::kInt8, 1, "int8", "|i1"},
    {TokenType::kUint16, 2, "uint16", "<u2"}, {TokenType::kInt16, 2, "int16", "<i2"},
    {TokenType::kUint32, 4, "uint32", "<u4"}, {TokenType::kInt32, 4, "int32", "<i4"},
    {TokenType::kInt64, 8, "int64", "<i8"},   {TokenType::kUint64, 8, "uint64", "<u8"}};

// The first bad token of type T: a signed one below 0 or an unsigned one above int64's range.
template <typename T>
std::optional<BadToken> first_bad(const uint8_t* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
    if constexpr (std::numeric_limits<T>::is_signed) {
      if (value < 0) return BadToken{i, fmt::format("{}", value)};
    } else {
      if (value > static_cast<T>(std::numeric_limits<int64_t>::max()))
        return BadToken{i, fmt::format("{}", value)};
    }
  }
  return std::nullopt;
}

}  // namespace

size_t token_type_size(TokenType type) { return kTokenTypes[static_cast<size_t>(type)].size; }

const char* token_type_name(TokenType type) { return kTokenTypes[static_cast<size_t>(type)].name; }

uint64_t token_type_max(TokenType type) {
  const size_t size = token_type_size(type);
  const bool is_signed = type == TokenType::kInt8 || type == TokenType::kInt16 ||
                         type == TokenType::kInt32 || type == TokenType::kInt64;
  return size == 8 ? static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                   : (uint64_t{1} << (8 * size - (is_signed ? 1 : 0))) - 1;
}

void TokenLayout::append(uint64_t offset, uint64_t count, uint32_t file) {
  if (count == 0) return;
  const uint64_t size = token_type_size(type);
  if (!spans.empty() && spans.back().file == file &&
      spans.back().offset + spans.back().count * size == offset) {
    spans.back().count += count;
  } else {
    spans.push_back({offset, tokens, count, file});
  }
  tokens += count;
}

Result<TokenLayout> raw_token_layout(const std::string& name, uint64_t size, TokenType type) {
  const uint64_t item = token_type_size(type);
  if (size % item != 0)
    return corrupt(fmt::format("{}: {} bytes, not a whole number of {} tokens ({} bytes each)",
                               name, size, token_type_name(type), item));
  TokenLayout layout;
  layout.type = type;
  layout.append(0, size / item);
  return layout;
}

Result<TokenLayout> npy_token_layout(const std::string& name, ByteSpan head, uint64_t size) {
  Result<NpyHeader> parsed = parse_npy_header(head);
  if (!parsed.is_ok()) return corrupt(fmt::format("{}: {}", name, parsed.status().message()));
  const NpyHeader& header = parsed.value();
  TokenLayout layout;
  bool known = false;
  for (const TokenTypeInfo& info : kTokenTypes) {
    if (header.descr != info.descr) continue;
    layout.type = info.type;
    known = true;
  }
  if (!known)
    return corrupt(fmt::format("{}: an array of '{}', not of integer token ids (uint8 to int64)",
                               name, header.descr));
  if (header.shape.size() != 1)
    return corrupt(fmt::format("{}: an array of {} dimensions, not 1 (a flat array of tokens)",
                               name, header.shape.size()));
  // A 1-D array is in C order whatever its fortran_order says.
  const uint64_t count = static_cast<uint64_t>(header.shape[0]);
  Result<uint64_t> data = npy_data_bytes(header, token_type_size(layout.type));
  if (!data.is_ok()) return corrupt(fmt::format("{}: {}", name, data.status().message()));
  const uint64_t bytes = data.value();
  if (header.data_offset > size || size - header.data_offset != bytes)
    return corrupt(
        fmt::format("{}: {} tokens of {} bytes after a {}-byte header, but the file "
                    "has {} bytes",
                    name, count, token_type_size(layout.type), header.data_offset, size));
  layout.append(header.data_offset, count);
  return layout;
}

bool token_type_checked(TokenType type) {
  return type == TokenType::kInt8 || type == TokenType::kInt16 || type == TokenType::kInt32 ||
         type == TokenType::kInt64 || type == TokenType::kUint64;
}

std::optional<BadToken> find_bad_token(TokenType type, const uint8_t* bytes, size_t n) {
  switch (type) {
    case TokenType::kInt8:
      return first_bad<int8_t>(bytes, n);
    case TokenType::kInt16:
      return first_bad<int16_t>(bytes, n);
    case TokenType::kInt32:
      return first_bad<int32_t>(bytes, n);
    case TokenType::kInt64:
      return first_bad<int64_t>(bytes, n);
    case TokenType::kUint64:
      return first_bad<uint64_t>(bytes, n);
    default:  // uint8 to uint32: every value is a token id
      return std::nullopt;
  }
}

std::optional<BadToken> widen_tokens(TokenType type, const uint8_t* bytes, size_t n, int64_t* out) {
  if (token_type_checked(type)) {
    if (std::optional<BadToken> bad = find_bad_token(type, bytes, n)) return bad;
  }
  widen_to_int64(type, bytes, n, reinterpret_cast<uint8_t*>(out));
  return std::nullopt;
}

}  // namespace stoker
