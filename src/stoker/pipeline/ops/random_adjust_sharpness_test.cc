// random_adjust_sharpness against torchvision.transforms.v2.functional.adjust_sharpness on PIL
// images (testing/pil_reference.h), pixel for pixel: factors 0 (the smoothed image), between 0
// and 1, 1 (the image), above 1, one float32 rounds to 0 and one it rounds to infinity.
#include "stoker/testing/pil_reference.h"

namespace stoker {
namespace {

TEST(RandomAdjustSharpnessTest, IsTorchvisionsOnPilImagesWhereDrawn) {
  std::vector<pil_reference::ReferenceCase> cases;
  for (const std::string factor :
       {"0", "1e-50", "0.3", "0.5", "0.7", "1.3", "1.7", "2", "3.3", "10", "1e39"})
    cases.push_back({{{"sharpness_factor", factor}}, "F.adjust_sharpness(image, " + factor + ")"});
  pil_reference::expect_torchvision_pixels("random_adjust_sharpness", cases);
}

TEST(RandomAdjustSharpnessTest, FactorOneLeavesTheImage) {
  std::vector<uint8_t> pixels(3 * 6 * 5);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37);
  const std::vector<uint8_t> before = pixels;
  ASSERT_TRUE(pil_reference::make_pixel_op("random_adjust_sharpness",
                                           {{"sharpness_factor", 1.0}, {"p", 1.0}}, {3, 6, 5})
                  ->apply(pil_reference::op_sample(0), pixels.data())
                  .is_ok());
  EXPECT_EQ(pixels, before);
}

TEST(RandomAdjustSharpnessTest, RefusesNegativeFactors) {
  EXPECT_EQ(pil_reference::call_error("random_adjust_sharpness", {{"sharpness_factor", -0.5}}),
            "random_adjust_sharpness: sharpness_factor must be a number at least 0, not -0.5");
  EXPECT_EQ(pil_reference::call_error("random_adjust_sharpness", {{"p", 1.01}}),
            "random_adjust_sharpness: p must be a number in [0, 1], not 1.01");
}

}  // namespace
}  // namespace stoker
