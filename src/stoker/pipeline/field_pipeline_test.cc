#include "stoker/pipeline/field_pipeline.h"

#include <gtest/gtest.h>

#include <cstring>

#include "stoker/pipeline/normalization.h"
#include "stoker/store/record_encoder.h"
#include "stoker/store/record_view.h"
#include "stoker/testing/test_images.h"

namespace stoker {
namespace {

// Records {image: a JPEG, pixels: uint8 [3, 4, 5], label: int64}.
class FieldPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    image::testing::JpegSpec jpeg;
    jpeg.width = 40;
    jpeg.height = 30;
    const std::vector<uint8_t> bytes = image::testing::encode_jpeg(jpeg);
    std::vector<uint8_t> pixels(60);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37 % 256);
    const int64_t label = 2;
    RecordEncoder encoder(schema_);
    throw_if_error(encoder.set_bytes(0, bytes.data(), bytes.size()));
    throw_if_error(encoder.set_fixed(1, pixels.data(), pixels.size()));
    throw_if_error(encoder.set_fixed(2, &label, sizeof label));
    record_ = encoder.encode();
  }

  std::vector<OpCall> calls(const std::vector<std::string>& texts) const {
    std::vector<OpCall> out;
    for (const std::string& text : texts) out.push_back(parse_op_call(text).value());
    return out;
  }

  FieldRequest request(const std::string& field, const std::vector<std::string>& texts) const {
    return make_field_request(schema_, field, calls(texts)).value();
  }

  std::string error(const std::string& field, const std::vector<std::string>& texts) const {
    return make_field_request(schema_, field, calls(texts)).status().message();
  }

  SampleInput input(int64_t index, uint64_t step = 0) const {
    SampleInput in;
    in.record = ByteSpan{record_.data(), record_.size()};
    in.schema = &schema_;
    in.index = index;
    in.epoch = 1;
    in.seed = 5;
    in.step = step;
    return in;
  }

  // The bytes `transform` writes for sample `index`.
  std::vector<uint8_t> sample(const Transform& transform, int64_t index) const {
    size_t bytes = dtype_size(transform.dtype());
    for (int64_t d : transform.sample_shape()) bytes *= static_cast<size_t>(d);
    std::vector<uint8_t> out(bytes);
    const Status s = transform.apply(input(index), out.data());
    EXPECT_TRUE(s.is_ok()) << s.message();
    return out;
  }

  // `pixels` after color_jitter (brightness and contrast 0.5) as the pipeline's pixel operation
  // number `step` draws.
  std::vector<uint8_t> jittered(std::vector<uint8_t> pixels, const std::vector<int64_t>& shape,
                                int64_t index, uint64_t step = 1) const {
    const OpCall call = parse_op_call("color_jitter:brightness=0.5,contrast=0.5").value();
    const auto op = call.op->make_pixel(call.params, {"image", shape}).value();
    EXPECT_TRUE(op->apply(input(index, step), pixels.data()).is_ok());
    return pixels;
  }

  const Schema schema_ = Schema::create({{"image", DType::kBytes, {}},
                                         {"pixels", DType::kUint8, {3, 4, 5}},
                                         {"label", DType::kInt64, {}}})
                             .value_or_throw();
  std::vector<uint8_t> record_;
};

TEST_F(FieldPipelineTest, WithoutASourceTheStoredFieldAsBefore) {
  const FieldRequest copy = request("pixels", {});
  EXPECT_EQ(copy.name, "pixels");
  EXPECT_FALSE(copy.normalize);
  EXPECT_EQ(copy.transform, nullptr);
  const FieldRequest normalized = request("pixels", {"normalize:mean=0.5,std=[0.25,0.5,1]"});
  EXPECT_TRUE(normalized.normalize);
  EXPECT_EQ(normalized.mean, std::vector<float>{0.5f});
  EXPECT_EQ(normalized.std, (std::vector<float>{0.25f, 0.5f, 1.0f}));
  EXPECT_EQ(normalized.transform, nullptr);
}

TEST_F(FieldPipelineTest, ASourceAloneOrFusedWithNormalizeIsItsTransform) {
  ImageOutput output;
  output.size = 16;
  output.uint8 = false;
  output.mean = {0.5f, 0.4f, 0.3f};
  output.std = {0.2f};
  RandomCropOptions options;
  options.crop.scale_min = 0.3;
  options.flip_probability = 0.5;
  const auto direct = random_resized_crop_transform(schema_, "image", output, options).value();
  const FieldRequest made = request("image", {"random_resized_crop:size=16,scale=[0.3,1],flip=0.5",
                                              "normalize:mean=[0.5,0.4,"
                                              "0.3],std=0.2"});
  ASSERT_NE(made.transform, nullptr);
  EXPECT_EQ(made.transform->dtype(), DType::kFloat32);
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(sample(*made.transform, i), sample(*direct, i));

  output.uint8 = true;
  const auto center = center_crop_transform(schema_, "image", output, 20).value();
  const FieldRequest eval = request("image", {"center_crop:size=16,resize=20"});
  EXPECT_EQ(eval.transform->dtype(), DType::kUint8);
  EXPECT_EQ(sample(*eval.transform, 0), sample(*center, 0));

  // A source alone writes what it writes.
  const FieldRequest cost = request("cost", {"busy_wait"});
  EXPECT_EQ(cost.transform->dtype(), DType::kInt64);
  const std::vector<uint8_t> index = sample(*cost.transform, 7);
  EXPECT_EQ(index[0], 7);
}

TEST_F(FieldPipelineTest, PixelOperationsFollowTheSourceOnTheirOwnStream) {
  const std::string jitter = "color_jitter:brightness=0.5,contrast=0.5";
  const FieldRequest crop = request("image", {"random_resized_crop:size=16"});
  const FieldRequest jittered_crop = request("image", {"random_resized_crop:size=16", jitter});
  const FieldRequest normalized =
      request("image", {"random_resized_crop:size=16", jitter, "normalize:mean=0.5,std=0.25"});
  const Normalization n = Normalization::create({3, 16, 16}, {0.5f}, {0.25f}).value();
  const std::vector<int64_t> shape = {3, 16, 16};
  for (int64_t i = 0; i < 6; ++i) {
    // The crop's draws are the crop alone's: the jitter draws from step 1.
    const std::vector<uint8_t> expected = jittered(sample(*crop.transform, i), shape, i);
    EXPECT_EQ(sample(*jittered_crop.transform, i), expected);
    std::vector<float> floats(expected.size());
    n.apply(expected.data(), floats.data(), 1);
    const std::vector<uint8_t> got = sample(*normalized.transform, i);
    EXPECT_EQ(std::memcmp(got.data(), floats.data(), got.size()), 0);
  }
  // On a stored uint8 field, after a copy.
  const uint8_t* stored = fixed_field(schema_, input(0).record, 1);
  EXPECT_EQ(sample(*request("pixels", {jitter}).transform, 3),
            jittered(std::vector<uint8_t>(stored, stored + 60), {3, 4, 5}, 3));
}

// `floats` after random_erasing (p=1, value=9) as the field's call number `step` draws.
std::vector<float> erased(std::vector<float> floats, const std::vector<int64_t>& shape,
                          SampleInput input) {
  const OpCall call = parse_op_call("random_erasing:p=1,value=9").value();
  EXPECT_TRUE(call.op->make_float(call.params, {"image", shape})
                  .value()
                  ->apply(input, floats.data())
                  .is_ok());
  return floats;
}

std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

TEST_F(FieldPipelineTest, FloatOperationsFollowNormalizeFusedOrNotOnTheirOwnStream) {
  const std::string erase = "random_erasing:p=1,value=9";
  const std::string normalize = "normalize:mean=0.5,std=0.25";
  const std::string jitter = "color_jitter:brightness=0.5";
  const std::vector<int64_t> shape = {3, 16, 16};
  const FieldRequest fused = request("image", {"random_resized_crop:size=16", normalize});
  const FieldRequest fused_erased =
      request("image", {"random_resized_crop:size=16", normalize, erase});
  const FieldRequest jittered_crop =
      request("image", {"random_resized_crop:size=16", jitter, normalize});
  const FieldRequest jittered_erased =
      request("image", {"random_resized_crop:size=16", jitter, normalize, erase});
  ASSERT_EQ(fused_erased.transform->dtype(), DType::kFloat32);
  int changed = 0;
  for (int64_t i = 0; i < 6; ++i) {
    // Call 2 after the source (normalize is call 1), and call 3 after a pixel operation.
    const std::vector<float> expected =
        erased(as_floats(sample(*fused.transform, i)), shape, input(i, 2));
    EXPECT_EQ(as_floats(sample(*fused_erased.transform, i)), expected);
    changed += expected != as_floats(sample(*fused.transform, i));
    EXPECT_EQ(as_floats(sample(*jittered_erased.transform, i)),
              erased(as_floats(sample(*jittered_crop.transform, i)), shape, input(i, 3)));
  }
  EXPECT_GT(changed, 2);
  // A stored uint8 field, normalised then erased.
  const FieldRequest stored = request("pixels", {normalize, erase});
  EXPECT_EQ(
      as_floats(sample(*stored.transform, 1)),
      erased(as_floats(sample(*request("pixels", {normalize, "random_erasing:p=0"}).transform, 1)),
             {3, 4, 5}, input(1, 2)));
}

// `pixels` [3, 4, 5] cropped by `crop` as the field's call number `step` draws.
std::vector<uint8_t> field_cropped(const std::vector<uint8_t>& pixels, const std::string& crop,
                                   const std::vector<int64_t>& shape, SampleInput input) {
  const OpCall call = parse_op_call(crop).value();
  const auto op = call.op->make_pixel(call.params, {"image", shape}).value();
  const auto& resizing = dynamic_cast<const ResizingPixelOp&>(*op);
  const std::vector<int64_t>& out_shape = resizing.output_shape();
  std::vector<uint8_t> out(static_cast<size_t>(out_shape[0] * out_shape[1] * out_shape[2]));
  EXPECT_TRUE(resizing.apply_to(input, pixels.data(), out.data()).is_ok());
  return out;
}

TEST_F(FieldPipelineTest, AStepThatChangesTheSizeGivesTheNextStepsAndTheBatchItsShape) {
  const std::string larger = "random_crop:size=[6,9],padding=1,pad_if_needed=true";
  const std::string smaller = "random_crop:size=[2,3]";
  const std::string jitter = "color_jitter:brightness=0.5,contrast=0.5";
  const FieldRequest grown = request("pixels", {larger});
  EXPECT_EQ(grown.transform->sample_shape(), (std::vector<int64_t>{3, 6, 9}));
  EXPECT_EQ(grown.transform->dtype(), DType::kUint8);
  const FieldRequest chain = request("pixels", {larger, jitter, smaller});
  EXPECT_EQ(chain.transform->sample_shape(), (std::vector<int64_t>{3, 2, 3}));
  const FieldRequest normalized =
      request("pixels", {larger, jitter, smaller, "normalize:mean=0.5,std=0.25"});
  EXPECT_EQ(normalized.transform->sample_shape(), (std::vector<int64_t>{3, 2, 3}));
  const Normalization n = Normalization::create({3, 2, 3}, {0.5f}, {0.25f}).value();
  const uint8_t* stored = fixed_field(schema_, input(0).record, 1);
  for (int64_t i = 0; i < 6; ++i) {
    // Each step made for the shape before it, drawing from its own stream (steps 1, 2, 3).
    const std::vector<uint8_t> first =
        field_cropped(std::vector<uint8_t>(stored, stored + 60), larger, {3, 4, 5}, input(i, 1));
    EXPECT_EQ(sample(*grown.transform, i), first);
    const std::vector<uint8_t> expected =
        field_cropped(jittered(first, {3, 6, 9}, i, 2), smaller, {3, 6, 9}, input(i, 3));
    EXPECT_EQ(sample(*chain.transform, i), expected);
    std::vector<float> floats(expected.size());
    n.apply(expected.data(), floats.data(), 1);
    const std::vector<uint8_t> got = sample(*normalized.transform, i);
    EXPECT_EQ(std::memcmp(got.data(), floats.data(), got.size()), 0);
  }
  // After a source; and a combinator's operations keep the size.
  EXPECT_EQ(request("image", {"random_resized_crop:size=16", "random_crop:size=12,padding=2"})
                .transform->sample_shape(),
            (std::vector<int64_t>{3, 12, 12}));
  EXPECT_EQ(error("pixels", {"random_apply:ops=[random_crop:size=2]"}),
            "field 'pixels': random_crop changes the image's size: a combinator's operations "
            "keep it");
}

TEST_F(FieldPipelineTest, CallsOutOfOrderOrOnTheWrongFieldAreOneLine) {
  // Composed by their types (sample_type.h): the first misfit named with what it takes and what
  // it was given.
  const std::string jitter = "color_jitter:brightness=0.5";
  EXPECT_EQ(error("image", {"random_resized_crop", "normalize", jitter}),
            "field 'image': color_jitter takes uint8 images [C, H, W]; normalize before it makes "
            "float32 images [C, H, W]");
  EXPECT_EQ(error("image", {"random_resized_crop", "random_erasing"}),
            "field 'image': random_erasing takes float32 images [C, H, W]; random_resized_crop "
            "before it makes uint8 images [C, H, W]");
  EXPECT_EQ(error("image", {"random_resized_crop", "normalize", "normalize"}),
            "field 'image': normalize takes uint8 images [C, H, W]; normalize before it makes "
            "float32 images [C, H, W]");
  EXPECT_EQ(error("image", {"random_resized_crop", jitter, "random_resized_crop"}),
            "field 'image': random_resized_crop makes the field from the record: it must come "
            "first");
  EXPECT_EQ(error("label", {jitter}),
            "field 'label': color_jitter takes uint8 images [C, H, W]; the stored field holds "
            "int64 arrays");
  EXPECT_EQ(
      error("image", {jitter}),
      "field 'image': color_jitter takes uint8 images [C, H, W]; the stored field holds "
      "encoded bytes (images, videos) (a decoding operation such as random_resized_crop must come "
      "first)");
  EXPECT_EQ(error("cost", {"busy_wait", "normalize"}),
            "field 'cost': normalize takes uint8 images [C, H, W]; busy_wait before it makes "
            "int64 arrays");
  EXPECT_EQ(error("image", {"decode_image", jitter}),
            "field 'image': color_jitter takes uint8 images [C, H, W]; decode_image before it "
            "makes uint8 images [C, H, W] of varying size");
  EXPECT_EQ(error("missing", {jitter}), "the dataset has no field 'missing'");
  // A factory's refusal names the field.
  EXPECT_EQ(error("label", {"random_resized_crop"}),
            "field 'label': not a bytes field of encoded images");
}

}  // namespace
}  // namespace stoker
