// random_equalize against torchvision.transforms.v2.functional.equalize on PIL images
// (testing/pil_reference.h), pixel for pixel.
#include "stoker/testing/pil_reference.h"

namespace stoker {
namespace {

TEST(RandomEqualizeTest, IsTorchvisionsOnPilImagesWhereDrawn) {
  pil_reference::expect_torchvision_pixels("random_equalize", {{{}, "F.equalize(image)"}});
}

TEST(RandomEqualizeTest, RefusesPOutsideZeroToOneAndOtherShapes) {
  EXPECT_EQ(pil_reference::call_error("random_equalize", {{"p", 1.5}}),
            "random_equalize: p must be a number in [0, 1], not 1.5");
  const OpCall call = make_op_call("random_equalize", {}).value();
  EXPECT_EQ(call.params.real("p"), 0.5);  // torchvision's default
  EXPECT_EQ(call.op->make_pixel(call.params, {"image", {4, 4, 4}}).status().message(),
            "field 'image': random_equalize needs images [1 or 3, H, W], not [4, 4, 4]");
}

}  // namespace
}  // namespace stoker
