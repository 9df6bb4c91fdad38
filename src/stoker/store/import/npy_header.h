#pragma once
// The header of a NumPy .npy file (numpy.lib.format, versions 1.0, 2.0 and 3.0): the magic
// "\x93NUMPY", the version, the header's length, then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces and a newline.
// A parser of untrusted bytes (a tar's member, fuzz/npy_fuzz.cc): strict where numpy's
// literal_eval is lenient (exactly the three keys, once each; plain quoted strings without
// escapes; decimal dimensions without signs or leading zeros, a one-dimension shape with its
// comma), the header's text at most 10,000 bytes as numpy.load allows. Functions; thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/schema.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

// Most bytes of header text read (numpy.load's max_header_size), and of a whole header.
constexpr size_t kMaxNpyHeaderText = 10000;
constexpr size_t kMaxNpyHeaderBytes = 12 + kMaxNpyHeaderText;

struct NpyHeader {
  std::string descr;  // numpy's type string: '<f4', '|u1', ...
  bool fortran_order = false;
  std::vector<int64_t> shape;  // each dimension at most 2^62
  size_t data_offset = 0;      // where the array's bytes start in the file
};

// How many of a file's first bytes `head` parse_npy_header needs: its header whole (the magic to
// the text's end) when `head` starts as a .npy file does, else the few that tell it is not one;
// at most head.size and kMaxNpyHeaderBytes.
size_t npy_header_size(ByteSpan head);

// The header at the start of `bytes` (at least npy_header_size of them): kCorrupt saying, in one
// line, why it is not a .npy header stoker reads.
Result<NpyHeader> parse_npy_header(ByteSpan bytes);

// The dtype of `descr` where stoker's format holds it as it is (uint8 '|u1', little-endian int64
// '<i8' and float32 '<f4'), else nullopt.
std::optional<DType> npy_dtype(const std::string& descr);

// Bytes of the array `header` describes with elements of `item_size` bytes, in numpy's C order:
// kCorrupt when more than 2^63, or when it is in Fortran order with two dimensions above 1.
Result<uint64_t> npy_data_bytes(const NpyHeader& header, size_t item_size);

}  // namespace stoker
