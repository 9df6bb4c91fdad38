// The combinators random_choice and random_apply: their results are their operations', as
// torchvision's RandomChoice and RandomApply compose them (testing/pil_reference.h's torchvision
// calls on PIL images), with the draws combinator.h documents; their choice frequencies; their
// text; their one-line errors.
#include <map>

#include "stoker/testing/pil_reference.h"
#include "stoker/util/rng.h"

namespace stoker {
namespace {

using pil_reference::op_sample;

std::shared_ptr<const PixelOp> combinator(const std::string& text,
                                          const std::vector<int64_t>& shape) {
  const OpCall call = parse_op_call(text).value();
  return call.op->make_pixel(call.params, {"image", shape}).value();
}

// random_choice picks operation j with the weights' share: its result is that operation's
// (torchvision's invert or posterize), the one its draw names.
TEST(CombinatorTest, RandomChoiceIsTheDrawnOperationsResult) {
  const std::vector<pil_reference::TestImage> images = pil_reference::test_images();
  const auto reference =
      pil_reference::reference_pixels(images, {"F.invert(image)", "F.posterize(image, 2)"});
  int first = 0, total = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const auto op =
        combinator("random_choice:ops=[random_invert:p=1;random_posterize:bits=2,p=1],p=[1,3]",
                   images[i].shape);
    for (int64_t r = 0; r < 8; ++r) {
      const SampleInput sample = op_sample(static_cast<int64_t>(i) + 1000 * r);
      std::vector<uint8_t> pixels = images[i].pixels;
      ASSERT_TRUE(op->apply(sample, pixels.data()).is_ok());
      const size_t j = sample.rng().next_double() * 4 < 1 ? 0 : 1;
      EXPECT_EQ(pixels, reference[j][i]) << "image " << i << " r " << r << " choice " << j;
      first += j == 0;
      ++total;
    }
  }
  EXPECT_GT(first, total / 8);
  EXPECT_LT(first, total / 2);
}

// The choice's frequencies are the weights' shares (a chi-square bound, 3 degrees of freedom,
// p about 1e-4), seen through the results of four operations on a one-pixel image.
TEST(CombinatorTest, RandomChoiceFrequenciesAreTheWeights) {
  const auto op = combinator(
      "random_choice:ops=[random_invert:p=1;random_posterize:bits=1,p=1;random_solarize:"
      "threshold=0,p=1;random_grayscale:p=0],p=[1,2,3,4]",
      {1, 1, 1});
  // 100 becomes 155 (invert), 0 (posterize to 1 bit), 155 (solarize at 0: inverted) or 100.
  std::map<int, int> seen;
  constexpr int kDraws = 20000;
  for (int64_t k = 0; k < kDraws; ++k) {
    uint8_t pixel = 100;
    ASSERT_TRUE(op->apply(op_sample(k), &pixel).is_ok());
    ++seen[pixel];
  }
  ASSERT_EQ(seen.size(), 3u);
  const double expected[] = {0.4, 0.2, 0.4};  // 155: invert + solarize; 0; 100
  const int values[] = {155, 0, 100};
  double chi2 = 0;
  for (int v = 0; v < 3; ++v) {
    const double e = expected[v] * kDraws;
    chi2 += (seen[values[v]] - e) * (seen[values[v]] - e) / e;
  }
  EXPECT_LT(chi2, 18.4);
}

// random_apply: all of its operations in order when its draw says so (torchvision's
// posterize(invert(image))), the image unchanged otherwise; an inner random operation draws from
// its own stream (combinator.h).
TEST(CombinatorTest, RandomApplyRunsItsOperationsInOrderWhereDrawn) {
  const std::vector<pil_reference::TestImage> images = pil_reference::test_images();
  const auto reference = pil_reference::reference_pixels(
      images, {"F.posterize(F.invert(image), 2)", "F.posterize(image, 2)"});
  int applied = 0, inverted = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const auto op =
        combinator("random_apply:ops=[random_invert:p=0.5;random_posterize:bits=2,p=1],p=0.7",
                   images[i].shape);
    for (int64_t r = 0; r < 4; ++r) {
      const SampleInput sample = op_sample(static_cast<int64_t>(i) + 1000 * r);
      std::vector<uint8_t> pixels = images[i].pixels;
      ASSERT_TRUE(op->apply(sample, pixels.data()).is_ok());
      const bool drawn = sample.rng().next_double() < 0.7;
      // Operation 0's stream: step derive_stream(s, 1) of the sample (combinator.h).
      SampleInput inner = sample;
      inner.step = derive_stream(sample.step, 1);
      const bool invert = inner.rng().next_double() < 0.5;
      applied += drawn;
      inverted += drawn && invert;
      const std::vector<uint8_t>& want = !drawn ? images[i].pixels : reference[invert ? 0 : 1][i];
      EXPECT_EQ(pixels, want) << "image " << i << " r " << r;
    }
  }
  EXPECT_GT(applied, 0);
  EXPECT_GT(inverted, 0);
  EXPECT_LT(inverted, applied);
}

// random_choice of operations that change the size to one size (random_crop): a resizing
// operation of that size whose image is the chosen crop's, drawn from its own stream.
TEST(CombinatorTest, RandomChoiceOfCropsToOneSizeIsTheChosenCrop) {
  const std::vector<int64_t> shape = {3, 9, 11};
  std::vector<uint8_t> image(3 * 9 * 11);
  for (size_t k = 0; k < image.size(); ++k) image[k] = static_cast<uint8_t>(k * 7 % 251);
  const char* crops[] = {"random_crop:size=[5,6]", "random_crop:size=[5,6],padding=[3]"};
  const auto op = combinator(
      std::string("random_choice:ops=[") + crops[0] + ";" + crops[1] + "],p=[1,1]", shape);
  const auto* resizing = dynamic_cast<const ResizingPixelOp*>(op.get());
  ASSERT_NE(resizing, nullptr);
  EXPECT_EQ(resizing->output_shape(), (std::vector<int64_t>{3, 5, 6}));
  int padded = 0;
  for (int64_t r = 0; r < 40; ++r) {
    const SampleInput sample = op_sample(r);
    std::vector<uint8_t> got(3 * 5 * 6), want(3 * 5 * 6);
    ASSERT_TRUE(resizing->apply_to(sample, image.data(), got.data()).is_ok());
    const size_t j = sample.rng().next_double() * 2 < 1 ? 0 : 1;
    SampleInput inner = sample;
    inner.step = derive_stream(sample.step, j + 1);
    const auto crop = combinator(crops[j], shape);
    ASSERT_TRUE(dynamic_cast<const ResizingPixelOp&>(*crop)
                    .apply_to(inner, image.data(), want.data())
                    .is_ok());
    EXPECT_EQ(got, want) << "sample " << r << " choice " << j;
    padded += static_cast<int>(j);
  }
  EXPECT_GT(padded, 0);
  EXPECT_LT(padded, 40);
  // Two sizes, or a crop beside an operation that keeps the size, are one line.
  const OpCall two =
      parse_op_call("random_choice:ops=[random_crop:size=[5,6];random_crop:size=[4]]").value();
  EXPECT_EQ(two.op->make_pixel(two.params, {"image", shape}).status().message(),
            "field 'image': random_crop makes images 5 x 6, random_crop makes 4 x 4: a "
            "combinator's operations make one size");
  const OpCall mixed =
      parse_op_call("random_choice:ops=[random_crop:size=[5,6];random_invert]").value();
  EXPECT_EQ(mixed.op->make_pixel(mixed.params, {"image", shape}).status().message(),
            "field 'image': random_crop makes images 5 x 6, random_invert makes 9 x 11: a "
            "combinator's operations make one size");
  const OpCall applied = parse_op_call("random_apply:ops=[random_crop:size=[5]]").value();
  EXPECT_EQ(applied.op->make_pixel(applied.params, {"image", shape}).status().message(),
            "field 'image': random_crop changes the image's size: a combinator's operations "
            "keep it");
}

TEST(CombinatorTest, CallsReadBackAndNest) {
  const std::string text =
      "random_apply:ops=[random_choice:ops=[random_invert:p=1;random_equalize:p=0.5],p=[];"
      "random_horizontal_flip:p=0.5],p=0.25";
  const OpCall call = parse_op_call(text).value();
  EXPECT_EQ(to_text(call), text);
  EXPECT_EQ(to_text(parse_op_call(to_text(call)).value()), text);
  // Typed as Python gives it: the list's text, written back canonically.
  const OpCall typed =
      make_op_call("random_choice", {{"ops", std::string("[random_invert;random_invert:p=1]")}})
          .value();
  EXPECT_EQ(typed.params.ops("ops"), "[random_invert:p=0.5;random_invert:p=1]");
  // The default, no operation, leaves the image as it is.
  for (const char* name : {"random_choice", "random_apply:p=1"}) {
    uint8_t pixel = 7;
    ASSERT_TRUE(combinator(name, {1, 1, 1})->apply(op_sample(0), &pixel).is_ok());
    EXPECT_EQ(pixel, 7) << name;
  }
}

TEST(CombinatorTest, BadListsAreOneLine) {
  const auto error = [](const std::string& text) {
    const Result<OpCall> call = parse_op_call(text);
    EXPECT_FALSE(call.is_ok()) << text;
    return call.is_ok() ? "" : call.status().message();
  };
  std::string many = "random_choice:ops=[random_invert";
  for (int i = 0; i < 64; ++i) many += ";random_invert";
  EXPECT_EQ(error(many + "]"),
            "random_choice: ops: must be at most 64 pixel operations, [NAME:key=value;NAME], not "
            "65 of them");
  EXPECT_EQ(error("random_choice:ops=random_invert"),
            "random_choice: ops: 'random_invert' is not a list of calls [NAME:key=value;NAME]");
  EXPECT_EQ(error("random_apply:ops=[random_invert:p=2]"),
            "random_apply: ops: random_invert: p must be a number in [0, 1], not 2");
  EXPECT_EQ(error("random_apply:ops=[normalize]"),
            "random_apply: ops: normalize is not a pixel operation (uint8 image -> image)");
  EXPECT_EQ(error("random_apply:ops=[random_invert;]")
                .rfind("random_apply: ops: unknown "
                       "operation ''",
                       0),
            0u);
  std::string deep = "random_invert";
  for (int i = 0; i < kMaxOpNesting + 1; ++i) deep = "random_apply:ops=[" + deep + "]";
  EXPECT_NE(error(deep).find("nests brackets more than 8 deep"), std::string::npos) << error(deep);
  const OpCall unequal =
      parse_op_call("random_choice:ops=[random_invert;random_invert],p=[1]").value();
  EXPECT_EQ(unequal.op->make_pixel(unequal.params, {"image", {3, 4, 4}}).status().message(),
            "random_choice: p has 1 weights for 2 operations");
  const OpCall zero =
      parse_op_call("random_choice:ops=[random_invert;random_invert],p=[0,0]").value();
  EXPECT_EQ(zero.op->make_pixel(zero.params, {"image", {3, 4, 4}}).status().message(),
            "random_choice: the weights p sum to 0");
  const OpCall shape = parse_op_call("random_apply:ops=[random_invert]").value();
  EXPECT_EQ(shape.op->make_pixel(shape.params, {"image", {4, 4, 4}}).status().message(),
            "field 'image': random_invert needs images [1 or 3, H, W], not [4, 4, 4]");
}

}  // namespace
}  // namespace stoker
