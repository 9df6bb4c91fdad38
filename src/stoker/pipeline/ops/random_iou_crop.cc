// random_iou_crop: torchvision's RandomIoUCrop on a detection sample (the SSD crop of the
// `ssd` and `ssdlite` presets: v2's, or the detection reference's own v1 step), its algorithm
// with draws from the operation's own stream, in float32 as torch computes it (u: next_float(),
// torch.rand's values): an option picked from sampler_options (the n options' int(n
// next_double()), torch.randint's pick; >= 1: the sample unchanged); up to `trials` times, r =
// min_scale + float(max_scale - min_scale) u for each side, a crop of int(float(W) r0) x
// int(float(H) r1) within the aspect ratio bounds at int(float(W - w) u2), int(float(H - h) u3),
// kept if a box's centre lies strictly inside it and one such box's IoU with it (float32,
// torchvision's box_iou) reaches the option; else a new option. The kept crop cuts the image, masks
// (and class map); boxes move by (left, top) and are clamped to it. Those whose centre lies outside
// become (0, 0, 0, 0), as v2 marks them for SanitizeBoundingBoxes, or are dropped with their labels
// (outside "dropped", v1's); masks "kept" stay as they are (v1's, JointSample::keep_masks). A
// sample without a box that fits draws options until one is >= 1 (torchvision's loop), here at most
// kMaxRounds rounds, then stays unchanged.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {
namespace {

constexpr int kMaxRounds = 1000;

struct IouCropRect {
  int64_t left = 0, top = 0, width = 0, height = 0;
};

class RandomIouCrop : public JointOp {
 public:
  RandomIouCrop(double min_scale, double max_scale, double min_aspect, double max_aspect,
                std::vector<double> options, int64_t trials, bool drop_outside, bool keep_masks)
      : min_scale_(static_cast<float>(min_scale)),
        scale_span_(static_cast<float>(max_scale - min_scale)),
        min_aspect_(min_aspect),
        max_aspect_(max_aspect),
        options_(std::move(options)),
        trials_(trials),
        drop_outside_(drop_outside),
        keep_masks_(keep_masks) {}

  Status apply(const SampleInput& input, JointSample& sample) const override {
    if (keep_masks_) sample.keep_masks();
    CounterRng rng = input.rng();
    thread_local std::vector<uint8_t> within;
    const auto width = static_cast<float>(sample.width);
    const auto height = static_cast<float>(sample.height);
    for (int round = 0; round < kMaxRounds; ++round) {
      const double option =
          options_[static_cast<size_t>(static_cast<double>(options_.size()) * rng.next_double())];
      if (option >= 1.0) return Status::ok();
      for (int64_t trial = 0; trial < trials_; ++trial) {
        const float r0 = min_scale_ + scale_span_ * rng.next_float();
        const float r1 = min_scale_ + scale_span_ * rng.next_float();
        IouCropRect crop;
        crop.width = static_cast<int64_t>(width * r0);
        crop.height = static_cast<int64_t>(height * r1);
        if (crop.height == 0) continue;
        const double aspect = static_cast<double>(crop.width) / static_cast<double>(crop.height);
        if (!(min_aspect_ <= aspect && aspect <= max_aspect_)) continue;
        crop.left =
            static_cast<int64_t>(static_cast<float>(sample.width - crop.width) * rng.next_float());
        crop.top = static_cast<int64_t>(static_cast<float>(sample.height - crop.height) *
                                        rng.next_float());
        if (crop.width == 0) continue;
        if (!fits(sample, crop, option, within)) continue;
        cut(sample, crop, within);
        if (drop_outside_) sample.keep_rows(within);
        return Status::ok();
      }
    }
    return Status::ok();
  }

 private:
  // Marks in `within` the boxes whose centre lies strictly inside `crop`; true if one of them
  // overlaps it by an IoU of at least `option`.
  static bool fits(const JointSample& sample, const IouCropRect& crop, double option,
                   std::vector<uint8_t>& within) {
    within.assign(static_cast<size_t>(sample.rows()), 0);
    const auto left = static_cast<float>(crop.left), top = static_cast<float>(crop.top);
    const auto right = static_cast<float>(crop.left + crop.width);
    const auto bottom = static_cast<float>(crop.top + crop.height);
    const float crop_area = (right - left) * (bottom - top);
    float best = -1;
    for (size_t k = 0; k < within.size(); ++k) {
      const float* box = &sample.boxes[4 * k];
      const float cx = 0.5f * (box[0] + box[2]);
      const float cy = 0.5f * (box[1] + box[3]);
      within[k] = left < cx && cx < right && top < cy && cy < bottom;
      if (!within[k]) continue;
      const float area = (box[2] - box[0]) * (box[3] - box[1]);
      const float w = std::max(std::min(box[2], right) - std::max(box[0], left), 0.0f);
      const float h = std::max(std::min(box[3], bottom) - std::max(box[1], top), 0.0f);
      const float inter = w * h;
      best = std::max(best, inter / (area + crop_area - inter));
    }
    return best >= 0 && !(best < static_cast<float>(option));
  }

  static void cut_planes(std::vector<uint8_t>& data, int64_t planes, const JointSample& sample,
                         const IouCropRect& crop) {
    uint8_t* out = data.data();
    for (int64_t c = 0; c < planes; ++c) {
      const uint8_t* plane = data.data() + c * sample.height * sample.width;
      for (int64_t y = 0; y < crop.height; ++y, out += crop.width)
        std::copy_n(plane + (crop.top + y) * sample.width + crop.left, crop.width, out);
    }
    data.resize(static_cast<size_t>(planes * crop.height * crop.width));
  }

  static void cut(JointSample& sample, const IouCropRect& crop,
                  const std::vector<uint8_t>& within) {
    cut_planes(sample.image, 3, sample, crop);
    if (sample.has_masks) cut_planes(sample.masks, sample.rows(), sample, crop);
    if (sample.has_class_map) cut_planes(sample.class_map, 1, sample, crop);
    const auto left = static_cast<float>(crop.left), top = static_cast<float>(crop.top);
    const auto width = static_cast<float>(crop.width), height = static_cast<float>(crop.height);
    for (size_t k = 0; k < within.size(); ++k) {
      float* box = &sample.boxes[4 * k];
      for (int i = 0; i < 4; ++i) {
        const bool x = i % 2 == 0;
        box[i] = within[k] ? std::clamp(box[i] - (x ? left : top), 0.0f, x ? width : height) : 0;
      }
    }
    sample.width = crop.width;
    sample.height = crop.height;
  }

  const float min_scale_, scale_span_;
  const double min_aspect_, max_aspect_;
  const std::vector<double> options_;
  const int64_t trials_;
  const bool drop_outside_, keep_masks_;
};

}  // namespace

OpSpec random_iou_crop() {
  OpSpec op;
  op.name = "random_iou_crop";
  op.role = OpRole::kJoint;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomIoUCrop";
  op.doc =
      "A random crop holding a box's centre and overlapping one by at least a drawn IoU (the SSD "
      "crop: torchvision v2's RandomIoUCrop); boxes outside it zeroed for sanitize";
  op.params = {
      ParamSpec::real("min_scale", 0.3, "the smallest crop side, a fraction of the image's")
          .in(0, 1),
      ParamSpec::real("max_scale", 1.0, "the largest crop side, a fraction").in(0, 1),
      ParamSpec::real("min_aspect_ratio", 0.5, "the narrowest crop, width / height").above(0),
      ParamSpec::real("max_aspect_ratio", 2.0, "the widest crop").above(0),
      ParamSpec::reals("sampler_options", {0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0},
                       "the IoUs drawn from (>= 1: no crop)", 1, 64)
          .at_least(0),
      ParamSpec::integer("trials", 40, "crops tried for an option").in(1, 10000),
      ParamSpec::choice("outside", "zeroed", {"zeroed", "dropped"},
                        "the boxes whose centre the crop leaves out: zeroed for "
                        "SanitizeBoundingBoxes (v2), or dropped with their labels (the detection "
                        "reference's v1 step)"),
      ParamSpec::choice("masks", "moved", {"moved", "kept"},
                        "masks cut with the image (v2), or kept as they are (v1's)"),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    if (p.real("min_scale") > p.real("max_scale") ||
        p.real("min_aspect_ratio") > p.real("max_aspect_ratio"))
      return invalid_argument("random_iou_crop: a minimum above its maximum");
    return std::shared_ptr<const JointOp>(std::make_shared<RandomIouCrop>(
        p.real("min_scale"), p.real("max_scale"), p.real("min_aspect_ratio"),
        p.real("max_aspect_ratio"), p.reals("sampler_options"), p.integer("trials"),
        p.choice("outside") == "dropped", p.choice("masks") == "kept"));
  };
  return op;
}

}  // namespace stoker::ops
