#include "stoker/util/utf8.h"

#include <fmt/format.h>

#include <algorithm>

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

// Calls on_char(pos, length, code) for each well-formed character of `text` and
// on_char(pos, 0, 0) for each byte that does not start one, in order.
template <typename OnChar>
void for_each_char(std::string_view text, OnChar&& on_char) {
  for (size_t pos = 0; pos < text.size();) {
    char32_t code = 0;
    const size_t length = decode_one(text, pos, &code);
    on_char(pos, length, code);
    pos += length == 0 ? 1 : length;
  }
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  bool valid = true;
  for_each_char(text, [&](size_t, size_t length, char32_t) { valid = valid && length > 0; });
  return valid;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_char(text, [&](size_t pos, size_t length, char32_t code) {
    const bool control = code < 0x20 || (code >= 0x7f && code < 0xa0);
    if (length == 0 || control) {
      for (size_t i = pos; i < pos + std::max<size_t>(length, 1); ++i)
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      return;
    }
    if (code == '\\') out += '\\';
    out.append(text, pos, length);
  });
  return out;
}

std::string printable_list(const std::vector<std::string>& names, size_t shown) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < shown; ++i)
    text += (i ? ", " : "") + printable(names[i]);
  if (names.size() > shown) text += fmt::format(" and {} more", names.size() - shown);
  return text;
}

std::u32string fsdecode_code_points(std::string_view name) {
  std::u32string out;
  out.reserve(name.size());
  for_each_char(name, [&](size_t pos, size_t length, char32_t code) {
    out.push_back(length == 0 ? 0xdc00 + static_cast<unsigned char>(name[pos]) : code);
  });
  return out;
}

}  // namespace stoker
