// random_invert against torchvision.transforms.v2.functional.invert on PIL images
// (testing/pil_reference.h), pixel for pixel.
#include "stoker/testing/pil_reference.h"

namespace stoker {
namespace {

TEST(RandomInvertTest, IsTorchvisionsOnPilImagesWhereDrawn) {
  pil_reference::expect_torchvision_pixels("random_invert", {{{}, "F.invert(image)"}});
}

TEST(RandomInvertTest, RefusesPOutsideZeroToOneAndOtherShapes) {
  EXPECT_EQ(pil_reference::call_error("random_invert", {{"p", 1.5}}),
            "random_invert: p must be a number in [0, 1], not 1.5");
  const OpCall call = make_op_call("random_invert", {}).value();
  EXPECT_EQ(call.params.real("p"), 0.5);  // torchvision's default
  EXPECT_EQ(call.op->make_pixel(call.params, {"image", {4, 4, 4}}).status().message(),
            "field 'image': random_invert needs images [1 or 3, H, W], not [4, 4, 4]");
}

}  // namespace
}  // namespace stoker
