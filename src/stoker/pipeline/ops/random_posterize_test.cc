// random_posterize against torchvision.transforms.v2.functional.posterize on PIL images
// (testing/pil_reference.h), pixel for pixel, every bits.
#include "stoker/testing/pil_reference.h"

namespace stoker {
namespace {

using pil_reference::call_error;

TEST(RandomPosterizeTest, IsTorchvisionsOnPilImagesWhereDrawn) {
  std::vector<pil_reference::ReferenceCase> cases;
  for (int64_t bits : {1, 3, 4, 7, 8})
    cases.push_back({{{"bits", bits}}, "F.posterize(image, " + std::to_string(bits) + ")"});
  pil_reference::expect_torchvision_pixels("random_posterize", cases);
}

TEST(RandomPosterizeTest, RefusesBitsOutsideOneToEight) {
  EXPECT_EQ(call_error("random_posterize", {{"bits", int64_t{0}}}),
            "random_posterize: bits must be a whole number in [1, 8], not 0");
  EXPECT_EQ(call_error("random_posterize", {{"bits", int64_t{9}}}),
            "random_posterize: bits must be a whole number in [1, 8], not 9");
  EXPECT_EQ(call_error("random_posterize", {{"p", -0.1}}),
            "random_posterize: p must be a number in [0, 1], not -0.1");
}

}  // namespace
}  // namespace stoker
