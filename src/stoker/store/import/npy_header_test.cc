// The .npy header parser: numpy's own headers read, everything else refused in one line.
#include "stoker/store/import/npy_header.h"

#include <gtest/gtest.h>

#include <string>

#include "stoker/testing/npy_bytes.h"
#include "stoker/testing/tar_fixtures.h"

namespace stoker {
namespace {

// A .npy file's header of `dict`, padded as numpy pads it, in format version `major`.
std::string npy_test_header(const std::string& dict, int major = 1) {
  return testing::npy_bytes(dict, "", major);
}

ByteSpan npy_test_span(const std::string& bytes) {
  return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

Result<NpyHeader> npy_test_parse(const std::string& bytes) {
  return parse_npy_header(npy_test_span(bytes));
}

TEST(NpyHeader, ReadsTheHeadersNumpyWrites) {
  const std::string file =
      npy_test_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }") +
      std::string(48, 'x');
  const NpyHeader header = npy_test_parse(file).value_or_throw();
  EXPECT_EQ(header.descr, "<f4");
  EXPECT_FALSE(header.fortran_order);
  EXPECT_EQ(header.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(header.data_offset, 128u);
  EXPECT_EQ(npy_header_size(npy_test_span(file)), 128u);
  EXPECT_EQ(npy_data_bytes(header, 4).value_or_throw(), 48u);

  const NpyHeader one =
      npy_test_parse(
          npy_test_header("{\"shape\": (5,), \"fortran_order\": True, \"descr\": \"|u1\"}", 2))
          .value_or_throw();
  EXPECT_EQ(one.shape, std::vector<int64_t>{5});
  EXPECT_TRUE(one.fortran_order);
  EXPECT_EQ(one.data_offset, 128u);
  const NpyHeader scalar =
      npy_test_parse(npy_test_header("{'descr': '<i8', 'fortran_order': False, 'shape': ()}", 3))
          .value_or_throw();
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(npy_data_bytes(scalar, 8).value_or_throw(), 8u);
}

TEST(NpyHeader, ReadsNumpysFiles) {
  struct Case {
    const char* array;
    const char* descr;
    std::vector<int64_t> shape;
    bool fortran;
    size_t data;
  };
  const Case cases[] = {{"np.zeros((3, 4), dtype='<f4')", "<f4", {3, 4}, false, 48},
                        {"np.arange(5)", "<i8", {5}, false, 40},
                        {"np.uint8(7)", "|u1", {}, false, 1},
                        {"np.asfortranarray(np.zeros((2, 3)))", "<f8", {2, 3}, true, 48},
                        {"np.zeros((0, 2), dtype=np.float32)", "<f4", {0, 2}, false, 0},
                        {"np.array(['ab'])", "<U2", {1}, false, 8}};
  for (const Case& c : cases) {
    const std::string file = tar_fixtures::npy_file(c.array);
    const NpyHeader header = npy_test_parse(file).value_or_throw();
    EXPECT_EQ(header.descr, c.descr) << c.array;
    EXPECT_EQ(header.shape, c.shape) << c.array;
    EXPECT_EQ(header.fortran_order, c.fortran) << c.array;
    EXPECT_EQ(header.data_offset, file.size() - c.data) << c.array;
    EXPECT_EQ(npy_header_size(npy_test_span(file)), header.data_offset) << c.array;
  }
}

TEST(NpyHeader, HoldsTheFormatsDtypesOnly) {
  EXPECT_EQ(npy_dtype("|u1"), DType::kUint8);
  EXPECT_EQ(npy_dtype("<i8"), DType::kInt64);
  EXPECT_EQ(npy_dtype("<f4"), DType::kFloat32);
  for (const char* other : {"<f8", ">f4", ">i8", "<i4", "|b1", "<U3", "|O", ""})
    EXPECT_EQ(npy_dtype(other), std::nullopt) << other;
}

TEST(NpyHeader, SizesTheHeaderFromItsFirstBytes) {
  const std::string file =
      npy_test_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}");
  EXPECT_EQ(npy_header_size(npy_test_span(file + "data")), file.size());
  EXPECT_EQ(npy_header_size(npy_test_span(file.substr(0, 30))), 30u);
  EXPECT_EQ(npy_header_size(npy_test_span("plain text, not an array")), 8u);
  EXPECT_EQ(npy_header_size(npy_test_span("ab")), 2u);
  std::string huge = file.substr(0, 10);
  huge[8] = '\xff';
  huge[9] = '\xff';
  EXPECT_EQ(npy_header_size(npy_test_span(huge + std::string(70000, ' '))), 10u);
}

TEST(NpyHeader, RefusesWhatIsNotAWholeHeaderInOneLine) {
  const std::string good =
      npy_test_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}");
  std::string version = good;
  version[6] = 4;
  std::string huge = good.substr(0, 10);
  huge[8] = '\x11';
  huge[9] = '\x27';  // 10001 bytes of text
  const std::pair<std::string, std::string> cases[] = {
      {"not an npy", "no \\x93NUMPY magic at its start"},
      {version, "format version 4.0, not 1.0, 2.0 or 3.0"},
      {good.substr(0, 9), "cut short in its header"},
      {good.substr(0, 40), "cut short in its header"},
      {huge + std::string(10001, ' '), "a header of 10001 bytes, more than 10000"},
      {npy_test_header("['descr', '<f4']"), "its header is not a dict"},
      {npy_test_header("{'descr': '<f4', 'shape': (2,)}"),
       "its header lacks descr, fortran_order or shape"},
      {npy_test_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}"),
       "its header has the key 'descr' again or besides descr, fortran_order and shape"},
      {npy_test_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}"),
       "its header has the key 'x' again or besides descr, fortran_order and shape"},
      {npy_test_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}"),
       "'descr' is not a type string"},
      {npy_test_header("{'descr': '<f\\x34', 'fortran_order': False, 'shape': ()}"),
       "'descr' is not a type string"},
      {npy_test_header("{'descr': '<f4', 'fortran_order': 0, 'shape': ()}"),
       "'fortran_order' is not True or False"},
      {npy_test_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}"),
       "'shape' is not a tuple of dimensions from 0 to 2^62"},
      {npy_test_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}"),
       "'shape' is not a tuple of dimensions from 0 to 2^62"},
      {npy_test_header("{'descr': '<f4', 'fortran_order': False, 'shape': (02,)}"),
       "'shape' is not a tuple of dimensions from 0 to 2^62"},
      {npy_test_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905,)}"),
       "'shape' is not a tuple of dimensions from 0 to 2^62"},
      {npy_test_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x"),
       "text after its header's dict"},
      {npy_test_header(
           std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\0", 56)),
       "a NUL byte in its header"},
  };
  for (const auto& [bytes, why] : cases) {
    const Result<NpyHeader> header = npy_test_parse(bytes);
    ASSERT_FALSE(header.is_ok()) << why;
    EXPECT_EQ(header.status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(header.status().message(), "not a .npy array stoker reads: " + why);
  }
}

TEST(NpyHeader, DataBytesRefuseOverflowAndFortranOrder) {
  NpyHeader header;
  header.shape = {int64_t{1} << 62, 4};
  EXPECT_EQ(npy_data_bytes(header, 1).status().message(),
            "not a .npy array stoker reads: its shape holds more than 2^63 bytes");
  header.shape = {0, 5};
  EXPECT_EQ(npy_data_bytes(header, 4).value_or_throw(), 0u);
  header.fortran_order = true;
  header.shape = {1, 5, 1};
  EXPECT_EQ(npy_data_bytes(header, 4).value_or_throw(), 20u);  // one order as good as the other
  header.shape = {2, 5};
  EXPECT_EQ(npy_data_bytes(header, 4).status().message(),
            "not a .npy array stoker reads: in Fortran order");
}

}  // namespace
}  // namespace stoker
