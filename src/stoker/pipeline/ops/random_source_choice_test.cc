// random_source_choice, torchvision's RandomChoice of decoding crops: each sample is the chosen
// crop's own sample (that crop standing alone, drawing from its stream, combinator.h), the
// choice drawn with the weights' shares; operations of two sizes, a variable source or a pixel
// operation in its list are one-line errors. The crops' pixels against torchvision are their own
// tests' (image_transforms_test.cc).
#include <gtest/gtest.h>

#include "stoker/pipeline/ops/combinator.h"
#include "stoker/store/record_encoder.h"
#include "stoker/testing/test_images.h"

namespace stoker {
namespace {

const Schema& source_choice_schema() {
  static const Schema schema =
      Schema::create({{"label", DType::kInt64, {}}, {"image", DType::kBytes, {}}}).value_or_throw();
  return schema;
}

Result<std::shared_ptr<const Transform>> made_source(const std::string& text) {
  Result<OpCall> call = parse_op_call(text);
  if (!call.is_ok()) return call.status();
  SourceContext context;
  context.schema = &source_choice_schema();
  context.field = "image";
  context.output.uint8 = true;
  return call.value().op->make_source(call.value().params, context);
}

std::vector<uint8_t> source_choice_record() {
  image::testing::JpegSpec spec;
  spec.width = 61;
  spec.height = 47;
  RecordEncoder encoder(source_choice_schema());
  const int64_t label = 0;
  throw_if_error(encoder.set_fixed(0, &label, sizeof label));
  const std::vector<uint8_t> jpeg = image::testing::encode_jpeg(spec);
  throw_if_error(encoder.set_bytes(1, jpeg.data(), jpeg.size()));
  return encoder.encode();
}

std::vector<uint8_t> sample_of(const Transform& source, const SampleInput& input) {
  std::vector<uint8_t> out(3 * 16 * 16);
  EXPECT_TRUE(source.apply(input, out.data()).is_ok());
  return out;
}

TEST(RandomSourceChoiceTest, EachSampleIsTheChosenCropsOwn) {
  const char* crops[] = {"random_resized_crop:size=16,scale=[0.2,0.5]",
                         "random_resized_crop:size=16,interpolation=bicubic,flip=0.5"};
  const auto choice = made_source(std::string("random_source_choice:ops=[") + crops[0] + ";" +
                                  crops[1] + "],p=[1,3]")
                          .value();
  EXPECT_EQ(choice->sample_shape(), (std::vector<int64_t>{3, 16, 16}));
  const auto first = made_source(crops[0]).value(), second = made_source(crops[1]).value();
  const std::vector<uint8_t> record = source_choice_record();
  int firsts = 0;
  constexpr int kSamples = 200;
  for (int64_t index = 0; index < kSamples; ++index) {
    SampleInput input;
    input.record = {record.data(), record.size()};
    input.schema = &source_choice_schema();
    input.index = index;
    input.seed = 5;
    const size_t j = input.rng().next_double() * 4 < 1 ? 0 : 1;
    const Transform& chosen = j == 0 ? *first : *second;
    EXPECT_EQ(sample_of(*choice, input), sample_of(chosen, ops::inner_input(input, j)))
        << "sample " << index << ", choice " << j;
    firsts += j == 0;
  }
  EXPECT_GT(firsts, kSamples / 8);  // a quarter expected
  EXPECT_LT(firsts, kSamples * 3 / 8);
}

TEST(RandomSourceChoiceTest, WrongListsAreOneLineErrors) {
  const auto message = [](const std::string& text) {
    Result<std::shared_ptr<const Transform>> made = made_source(text);
    EXPECT_FALSE(made.is_ok()) << text;
    return made.is_ok() ? std::string() : made.status().message();
  };
  EXPECT_EQ(message("random_source_choice:ops=[random_resized_crop:size=16;center_crop:size=8]"),
            "field 'image': random_source_choice: random_resized_crop makes uint8 3 x 16 x 16, "
            "center_crop makes uint8 3 x 8 x 8: its operations make one size");
  EXPECT_EQ(message("random_source_choice:ops=[decode_image]"),
            "field 'image': random_source_choice: decode_image makes samples of varying size: "
            "the choice makes one size");
  EXPECT_EQ(message("random_source_choice:ops=[random_invert]"),
            "random_source_choice: ops: random_invert is not a decoding operation (encoded record "
            "-> image)");
  EXPECT_EQ(message("random_source_choice:ops=[center_crop],p=[1,2]"),
            "random_source_choice: p has 2 weights for 1 operations");
  EXPECT_EQ(message("random_source_choice"),
            "field 'image': random_source_choice: it needs at least one operation");
}

}  // namespace
}  // namespace stoker
