#pragma once
// .npy files built byte by byte, as numpy.lib.format writes them (the magic, the version, the
// header's length, the dict padded with spaces to a multiple of 64 and a newline), with any dict
// text: the npy parser's tests and its fuzz target's seeds. Test-only.

#include <cstddef>
#include <string>

namespace stoker::testing {

// A .npy file of format version `major` (1, 2 or 3) whose header's text is `dict`, then `data`.
inline std::string npy_bytes(const std::string& dict, const std::string& data = "", int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string text = dict;
  while ((prefix + text.size() + 1) % 64 != 0) text += ' ';
  text += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return out + text + data;
}

}  // namespace stoker::testing
