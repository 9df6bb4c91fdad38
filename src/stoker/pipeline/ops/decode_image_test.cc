// decode_image and raw_bytes, the variable sources: decode_image's pixels are PIL's
// Image.open(...).convert("RGB") as [3, H, W] (JPEG gray and colour, PNG with alpha), at each
// image's own size; an image over max_size is refused before anything is written; both refuse
// a stored field that is not bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "stoker/pipeline/op_registry.h"
#include "stoker/store/record_encoder.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"

namespace stoker {
namespace {

constexpr const char* kPilDecode = R"(
import sys
import numpy as np
import PIL.Image
for path in sys.argv[1:]:
    image = np.asarray(PIL.Image.open(path).convert("RGB"))
    np.ascontiguousarray(image.transpose(2, 0, 1)).tofile(path + ".out")
)";

const Schema& image_schema() {
  static const Schema schema =
      Schema::create({{"label", DType::kInt64, {}}, {"image", DType::kBytes, {}}}).value_or_throw();
  return schema;
}

// The context of a source reading `field` of image_schema().
SourceContext image_context(const std::string& field) {
  SourceContext context;
  context.schema = &image_schema();
  context.field = field;
  return context;
}

std::shared_ptr<const Transform> source(const std::string& op, const std::string& field,
                                        int64_t cap, const char* param) {
  const OpCall call = make_op_call(op, {{param, cap}}).value();
  return call.op->make_source(call.params, image_context(field)).value();
}

std::vector<uint8_t> record_of(const std::vector<uint8_t>& bytes) {
  RecordEncoder encoder(image_schema());
  const int64_t label = 0;
  throw_if_error(encoder.set_fixed(0, &label, sizeof label));
  throw_if_error(encoder.set_bytes(1, bytes.data(), bytes.size()));
  return encoder.encode();
}

TEST(DecodeImageTest, PixelsArePilsRgbAtTheImagesOwnSize) {
  std::vector<std::vector<uint8_t>> images;
  for (int components : {3, 1}) {
    image::testing::JpegSpec spec;
    spec.width = 37 + components;
    spec.height = 23;
    spec.components = components;
    images.push_back(image::testing::encode_jpeg(spec));
  }
  image::testing::PngSpec png;
  png.color_type = 6;
  images.push_back(image::testing::encode_png(png));
  testing::TempDir dir;
  std::string args;
  for (size_t i = 0; i < images.size(); ++i) {
    ASSERT_FALSE(images[i].empty());
    const std::string path = dir / ("image" + std::to_string(i));
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(images[i].data()),
               static_cast<std::streamsize>(images[i].size()));
    args += " " + path;
  }
  std::ofstream(dir / "decode.py") << kPilDecode;
  ASSERT_EQ(std::system((std::string(STOKER_PYTHON) + " " + (dir / "decode.py") + args).c_str()),
            0);
  const auto transform = source("decode_image", "image", 64, "max_size");
  ASSERT_NE(transform->as_variable(), nullptr);
  EXPECT_EQ(transform->sample_shape(), (std::vector<int64_t>{3, 64, 64}));
  for (size_t i = 0; i < images.size(); ++i) {
    const std::vector<uint8_t> record = record_of(images[i]);
    SampleInput input;
    input.record = {record.data(), record.size()};
    input.schema = &image_schema();
    std::vector<uint8_t> slot(3 * 64 * 64, 0xee);
    int64_t shape[3] = {};
    ASSERT_TRUE(transform->as_variable()->apply_sized(input, slot.data(), shape).is_ok());
    std::ifstream in(dir / ("image" + std::to_string(i) + ".out"), std::ios::binary);
    const std::vector<uint8_t> theirs{std::istreambuf_iterator<char>(in), {}};
    ASSERT_EQ(theirs.size(), static_cast<size_t>(shape[0] * shape[1] * shape[2])) << i;
    EXPECT_EQ(shape[0], 3);
    EXPECT_TRUE(std::equal(theirs.begin(), theirs.end(), slot.begin())) << "image " << i;
    EXPECT_EQ(slot[theirs.size()], 0xee);  // nothing past the sample
  }
}

TEST(DecodeImageTest, AnImageOverMaxSizeIsRefusedUnwritten) {
  image::testing::JpegSpec spec;
  spec.width = 40;
  spec.height = 20;
  const std::vector<uint8_t> record = record_of(image::testing::encode_jpeg(spec));
  SampleInput input;
  input.record = {record.data(), record.size()};
  input.schema = &image_schema();
  std::vector<uint8_t> slot(3 * 32 * 32, 0xee);
  int64_t shape[3] = {};
  const Status status = source("decode_image", "image", 32, "max_size")
                            ->as_variable()
                            ->apply_sized(input, slot.data(), shape);
  EXPECT_EQ(status.message(), "the image is 40x20, larger than max_size 32");
  EXPECT_EQ(std::count(slot.begin(), slot.end(), 0xee), static_cast<long>(slot.size()));
}

TEST(DecodeImageTest, VariableSourcesReadBytesFieldsOnly) {
  for (const char* op : {"decode_image", "raw_bytes"}) {
    const OpCall call = make_op_call(op, {}).value();
    const Status status = call.op->make_source(call.params, image_context("label")).status();
    EXPECT_NE(status.message().find("field 'label'"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace stoker
