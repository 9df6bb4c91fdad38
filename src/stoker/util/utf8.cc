#include "stoker/util/utf8.h"

#include <fmt/format.h>

namespace stoker {
namespace {

// The length of the well-formed UTF-8 sequence at text[pos] and its code point in *code, or 0
// if none starts there (Unicode's table 3-7 of well-formed byte sequences).
size_t decode_one(std::string_view text, size_t pos, char32_t* code) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) {
    *code = b0;
    return 1;
  }
  size_t length;
  unsigned char low = 0x80, high = 0xbf;  // range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3;
    if (b0 == 0xe0) low = 0xa0;   // no overlong forms
    if (b0 == 0xed) high = 0x9f;  // no surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4;
    if (b0 == 0xf0) low = 0x90;   // no overlong forms
    if (b0 == 0xf4) high = 0x8f;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (text.size() - pos < length) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  char32_t value = b0 & (0xff >> (length + 1));
  for (size_t i = 1; i < length; ++i) {
    if (i > 1 && (byte(i) & 0xc0) != 0x80) return 0;
    value = (value << 6) | (byte(i) & 0x3f);
  }
  *code = value;
  return length;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  char32_t code = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = decode_one(text, pos, &code);
    if (length == 0) return false;
    pos += length;
  }
  return true;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char32_t code = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = decode_one(text, pos, &code);
    const bool control = code < 0x20 || (code >= 0x7f && code < 0xa0);
    if (length == 0 || control) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[pos]));
      ++pos;
      continue;
    }
    if (code == '\\') out += '\\';
    out.append(text, pos, length);
    pos += length;
  }
  return out;
}

std::u32string fsdecode_code_points(std::string_view name) {
  std::u32string out;
  out.reserve(name.size());
  char32_t code = 0;
  for (size_t pos = 0; pos < name.size();) {
    const size_t length = decode_one(name, pos, &code);
    if (length == 0) {
      out.push_back(0xdc00 + static_cast<unsigned char>(name[pos]));
      ++pos;
    } else {
      out.push_back(code);
      pos += length;
    }
  }
  return out;
}

}  // namespace stoker
