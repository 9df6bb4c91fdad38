// libFuzzer target for the .npy header parser (npy_header.h) and what reads a WebDataset
// member as a field (webdataset_value, webdataset_fields.h). For each input: the header a tar's
// index keeps (its first npy_header_size bytes) parses as the whole file does; a parsed header's
// data starts inside the file; each of a few fields either takes the input, its data inside it
// and as many bytes as its rows (or its fixed shape) need, or refuses it with kCorrupt in one
// line. Any violation is a __builtin_trap(); ASan and UBSan report the rest. docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "stoker/store/import/npy_header.h"
#include "stoker/store/import/webdataset_fields.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  using fuzz::check;
  const ByteSpan file{data, size};
  const size_t head = npy_header_size(file);
  check(head <= size && head <= kMaxNpyHeaderBytes);
  const Result<NpyHeader> whole = parse_npy_header(file);
  const Result<NpyHeader> kept = parse_npy_header({data, head});
  check(whole.is_ok() == kept.is_ok());
  if (whole.is_ok()) {
    const NpyHeader& h = whole.value();
    check(h.data_offset == head && h.descr == kept.value().descr && h.shape == kept.value().shape &&
          h.fortran_order == kept.value().fortran_order);
    for (const int64_t d : h.shape) check(d >= 0 && d <= (int64_t{1} << 62));
    (void)npy_data_bytes(h, 8);
  } else {
    check(whole.status().code() == StatusCode::kCorrupt);
    check(whole.status().message() == kept.status().message());
    check(whole.status().message().find('\n') == std::string::npos);
  }
  const Field fields[] = {{"b", DType::kBytes},
                          {"f", DType::kFloat32, {2, 3}},
                          {"s", DType::kUint8, {}},
                          {"v", DType::kInt64, {2}, "N"}};
  for (const Field& field : fields) {
    const Result<WebDatasetValue> value = webdataset_value(field, file);
    if (!value.is_ok()) {
      check(value.status().code() == StatusCode::kCorrupt);
      continue;
    }
    const ByteSpan got = value.value().data;
    check(got.data >= data && got.data + got.size == data + size);
    if (field.is_variable_length()) check(got.size == value.value().rows * field.row_bytes());
    if (field.is_fixed()) check(got.size == field.fixed_bytes());
  }
  return 0;
}
