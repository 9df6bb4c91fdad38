// random_solarize against torchvision.transforms.v2.functional.solarize on PIL images
// (testing/pil_reference.h), pixel for pixel, thresholds at the ends and between whole values.
#include "stoker/testing/pil_reference.h"

namespace stoker {
namespace {

using pil_reference::call_error;

TEST(RandomSolarizeTest, IsTorchvisionsOnPilImagesWhereDrawn) {
  std::vector<pil_reference::ReferenceCase> cases;
  for (const std::string threshold : {"0", "1", "100", "127.5", "128", "254", "255"})
    cases.push_back({{{"threshold", threshold}}, "F.solarize(image, " + threshold + ")"});
  pil_reference::expect_torchvision_pixels("random_solarize", cases);
}

TEST(RandomSolarizeTest, RefusesThresholdsOutsideTheValues) {
  EXPECT_EQ(call_error("random_solarize", {{"threshold", 256.0}}),
            "random_solarize: threshold must be a number in [0, 255], not 256");
  EXPECT_EQ(call_error("random_solarize", {{"threshold", -1.0}}),
            "random_solarize: threshold must be a number in [0, 255], not -1");
  EXPECT_EQ(call_error("random_solarize", {{"p", 2.0}}),
            "random_solarize: p must be a number in [0, 1], not 2");
}

}  // namespace
}  // namespace stoker
