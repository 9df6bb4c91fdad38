// random_autocontrast against torchvision's autocontrast (testing/pil_reference.h), pixel for
// pixel: on PIL images, and on their uint8 tensors with v1's and v2's tensor kernels.
#include "stoker/testing/pil_reference.h"

namespace stoker {
namespace {

TEST(RandomAutocontrastTest, IsTorchvisionsOnPilImagesWhereDrawn) {
  pil_reference::expect_torchvision_pixels("random_autocontrast", {{{}, "F.autocontrast(image)"}});
}

TEST(RandomAutocontrastTest, IsTorchvisionsOnTensorsWithEachVersionsKernels) {
  // No single quotes: the calls reach the reference script inside a shell's single quotes.
  const std::string v1 = "__import__(\"torchvision.transforms.functional\", fromlist=[\"F\"])";
  pil_reference::expect_torchvision_pixels(
      "random_autocontrast", {{{{"backend", std::string("tensor")}, {"kernels", std::string("v2")}},
                               "F.to_pil_image(F.autocontrast(F.pil_to_tensor(image)))"},
                              {{{"backend", std::string("tensor")}, {"kernels", std::string("v1")}},
                               "F.to_pil_image(" + v1 + ".autocontrast(F.pil_to_tensor(image)))"}});
}

TEST(RandomAutocontrastTest, RefusesPOutsideZeroToOneAndOtherShapes) {
  EXPECT_EQ(pil_reference::call_error("random_autocontrast", {{"p", 1.5}}),
            "random_autocontrast: p must be a number in [0, 1], not 1.5");
  const OpCall call = make_op_call("random_autocontrast", {}).value();
  EXPECT_EQ(call.params.real("p"), 0.5);  // torchvision's default
  EXPECT_EQ(call.op->make_pixel(call.params, {"image", {4, 4, 4}}).status().message(),
            "field 'image': random_autocontrast needs images [1 or 3, H, W], not [4, 4, 4]");
}

}  // namespace
}  // namespace stoker
