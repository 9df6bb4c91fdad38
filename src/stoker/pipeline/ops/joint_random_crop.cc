// joint_random_crop: torchvision v2's RandomCrop(size, pad_if_needed, fill) on a segmentation
// sample (image, class map), as the segmentation reference crops: with pad_if_needed, a side
// shorter than the crop is padded by its shortfall on both ends (image with `fill`, the class
// map with `mask_fill`: v2's fill={Mask: 255, "others": 0}; without, a sample smaller than the
// crop is an error, as v2's), then a crop of size x width at a top and left drawn uniformly
// (uniform_below, from the operation's own stream) where the padded side is longer. Samples with
// boxes or object masks are refused (their crop is not built yet).
#include <fmt/format.h>

#include <algorithm>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/joint_canvas.h"

namespace stoker::ops {
namespace {

class JointRandomCrop : public JointOp {
 public:
  JointRandomCrop(int64_t height, int64_t width, uint8_t fill, uint8_t mask_fill,
                  bool pad_if_needed)
      : height_(height),
        width_(width),
        fill_{{fill, fill, fill}, 0, mask_fill},
        pad_if_needed_(pad_if_needed) {}

  bool takes_unsettled() const override { return true; }
  Status apply(const SampleInput& input, JointSample& sample) const override {
    if (!sample.boxes.empty() || sample.has_masks)
      return invalid_argument("joint_random_crop: crops of boxes and object masks are not built");
    if (!pad_if_needed_ && (sample.height < height_ || sample.width < width_))
      return invalid_argument(
          fmt::format("joint_random_crop: the {}x{} image is smaller than the {}x{} crop (no "
                      "pad_if_needed)",
                      sample.width, sample.height, width_, height_));
    const int64_t pad_top = std::max<int64_t>(height_ - sample.height, 0);
    const int64_t pad_left = std::max<int64_t>(width_ - sample.width, 0);
    const int64_t padded_height = sample.height + 2 * pad_top;
    const int64_t padded_width = sample.width + 2 * pad_left;
    CounterRng rng = input.rng();
    const int64_t top = padded_height > height_
                            ? static_cast<int64_t>(rng.uniform_below(padded_height - height_ + 1))
                            : 0;
    const int64_t left = padded_width > width_
                             ? static_cast<int64_t>(rng.uniform_below(padded_width - width_ + 1))
                             : 0;
    // The crop at (left - pad_left, top - pad_top) of the sample, outside it the fills.
    return place_joint_sample("joint_random_crop", sample, left - pad_left, top - pad_top, width_,
                              height_, fill_);
  }

 private:
  const int64_t height_, width_;
  const CanvasFill fill_;
  const bool pad_if_needed_;
};

}  // namespace

OpSpec joint_random_crop() {
  OpSpec op;
  op.name = "joint_random_crop";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomCrop";
  op.doc =
      "A random size x width crop of the image and its class map, padded where shorter "
      "(torchvision v2's RandomCrop with pad_if_needed on (image, mask))";
  op.params = {
      ParamSpec::integer("size", 480, "the crop's height").in(1, kMaxImageSize),
      ParamSpec::integer("width", 0, "the crop's width (0: size)").in(0, kMaxImageSize),
      ParamSpec::integer("fill", 0, "the image's padding value").in(0, 255),
      ParamSpec::integer("mask_fill", 255, "the class map's padding value").in(0, 255),
      ParamSpec::flag("pad_if_needed", true, "pad a side shorter than the crop (else an error)"),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    const int64_t size = p.integer("size");
    const int64_t width = p.integer("width") == 0 ? size : p.integer("width");
    return std::shared_ptr<const JointOp>(std::make_shared<JointRandomCrop>(
        size, width, static_cast<uint8_t>(p.integer("fill")),
        static_cast<uint8_t>(p.integer("mask_fill")), p.flag("pad_if_needed")));
  };
  return op;
}

}  // namespace stoker::ops
