#include "stoker/store/import/npy_header.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace stoker {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicBytes = 6;
constexpr int64_t kMaxNpyDimension = int64_t{1} << 62;

// The text's length field: its offset's end (where the text starts) for `major`, or 0 for a
// version numpy does not write.
size_t npy_text_start(uint8_t major) {
  if (major == 1) return 10;
  if (major == 2 || major == 3) return 12;
  return 0;
}

uint32_t npy_text_length(const uint8_t* length, size_t start) {
  uint32_t n = 0;
  for (size_t i = start - 8; i-- > 0;) n = (n << 8) | length[i];
  return n;
}

// A reader of the header's dict literal; each call false where the text is not what it wants.
class NpyLiteral {
 public:
  explicit NpyLiteral(std::string text) : text_(std::move(text)) {}

  void spaces() {
    while (at_ < text_.size() && std::strchr(" \t\r\n", text_[at_]) != nullptr && text_[at_]) ++at_;
  }
  bool take(char c) {
    spaces();
    if (at_ >= text_.size() || text_[at_] != c) return false;
    ++at_;
    return true;
  }
  bool word(const char* w) {
    spaces();
    const size_t n = std::strlen(w);
    if (text_.compare(at_, n, w) != 0) return false;
    at_ += n;
    return true;
  }
  // A quoted string without escapes or line breaks.
  bool string(std::string& out) {
    spaces();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) return false;
    const char quote = text_[at_];
    const size_t end = text_.find(quote, at_ + 1);
    if (end == std::string::npos) return false;
    out = text_.substr(at_ + 1, end - at_ - 1);
    if (out.find_first_of("\\\n\r") != std::string::npos) return false;
    at_ = end + 1;
    return true;
  }
  // A decimal integer in 0 .. kMaxNpyDimension, no sign, no leading zero.
  bool dimension(int64_t& out) {
    spaces();
    const size_t start = at_;
    out = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      if (out > (kMaxNpyDimension - (text_[at_] - '0')) / 10) return false;
      out = out * 10 + (text_[at_++] - '0');
    }
    return at_ > start && (at_ - start == 1 || text_[start] != '0');
  }
  // ( ), (d,), (d, d), (d, d,) ...
  bool tuple(std::vector<int64_t>& out) {
    if (!take('(')) return false;
    out.clear();
    if (take(')')) return true;
    for (;;) {
      int64_t d = 0;
      if (!dimension(d)) return false;
      out.push_back(d);
      const bool comma = take(',');
      if (take(')')) return comma || out.size() > 1;
      if (!comma) return false;
    }
  }
  bool done() {
    spaces();
    return at_ == text_.size();
  }

 private:
  std::string text_;
  size_t at_ = 0;
};

}  // namespace

size_t npy_header_size(ByteSpan head) {
  const size_t magic = std::min<size_t>(head.size, kNpyMagicBytes + 2);
  if (head.size < kNpyMagicBytes + 2 || std::memcmp(head.data, kNpyMagic, kNpyMagicBytes) != 0)
    return magic;
  const size_t start = npy_text_start(head.data[kNpyMagicBytes]);
  if (start == 0 || head.size < start) return std::min(head.size, std::max(start, magic));
  const size_t length = npy_text_length(head.data + 8, start);
  if (length > kMaxNpyHeaderText) return start;
  return std::min(head.size, start + length);
}

Result<NpyHeader> parse_npy_header(ByteSpan bytes) {
  auto bad = [](const std::string& why) {
    return corrupt("not a .npy array stoker reads: " + why);
  };
  if (bytes.size < kNpyMagicBytes + 2 || std::memcmp(bytes.data, kNpyMagic, kNpyMagicBytes) != 0)
    return bad("no \\x93NUMPY magic at its start");
  const uint8_t major = bytes.data[kNpyMagicBytes];
  const size_t start = npy_text_start(major);
  if (start == 0)
    return bad(fmt::format("format version {}.{}, not 1.0, 2.0 or 3.0", major,
                           bytes.data[kNpyMagicBytes + 1]));
  if (bytes.size < start) return bad("cut short in its header");
  const size_t length = npy_text_length(bytes.data + 8, start);
  if (length > kMaxNpyHeaderText)
    return bad(fmt::format("a header of {} bytes, more than {}", length, kMaxNpyHeaderText));
  if (bytes.size - start < length) return bad("cut short in its header");
  const std::string text(reinterpret_cast<const char*>(bytes.data) + start, length);
  if (text.find('\0') != std::string::npos) return bad("a NUL byte in its header");
  NpyHeader header;
  header.data_offset = start + length;
  NpyLiteral in(text);
  bool descr = false, order = false, shape = false;
  if (!in.take('{')) return bad("its header is not a dict");
  while (!in.take('}')) {
    std::string key;
    if (!in.string(key) || !in.take(':')) return bad("its header is not a dict of the 3 keys");
    if (key == "descr" && !descr) {
      descr = in.string(header.descr);
      if (!descr) return bad("'descr' is not a type string");
    } else if (key == "fortran_order" && !order) {
      order = true;
      header.fortran_order = in.word("True");
      if (!header.fortran_order && !in.word("False"))
        return bad("'fortran_order' is not True or False");
    } else if (key == "shape" && !shape) {
      shape = in.tuple(header.shape);
      if (!shape) return bad("'shape' is not a tuple of dimensions from 0 to 2^62");
    } else {
      return bad(
          fmt::format("its header has the key '{}' again or besides descr, fortran_order "
                      "and shape",
                      key));
    }
    if (!in.take(',')) {
      if (!in.take('}')) return bad("its header is not a dict of the 3 keys");
      break;
    }
  }
  if (!in.done()) return bad("text after its header's dict");
  if (!descr || !order || !shape) return bad("its header lacks descr, fortran_order or shape");
  return header;
}

std::optional<DType> npy_dtype(const std::string& descr) {
  if (descr == "|u1" || descr == "<u1" || descr == ">u1" || descr == "u1") return DType::kUint8;
  if (descr == "<i8") return DType::kInt64;
  if (descr == "<f4") return DType::kFloat32;
  return std::nullopt;
}

Result<uint64_t> npy_data_bytes(const NpyHeader& header, size_t item_size) {
  const auto above_one =
      std::count_if(header.shape.begin(), header.shape.end(), [](int64_t d) { return d > 1; });
  if (header.fortran_order && above_one > 1)
    return corrupt("not a .npy array stoker reads: in Fortran order");
  uint64_t bytes = item_size;
  for (const int64_t d : header.shape)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes) ||
        bytes > (uint64_t{1} << 63))
      return corrupt("not a .npy array stoker reads: its shape holds more than 2^63 bytes");
  return bytes;
}

}  // namespace stoker
