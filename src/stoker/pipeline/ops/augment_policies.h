#pragma once
// What trivial_augment_wide, rand_augment and auto_augment share: their draws from the
// operation's own stream of a sample (CounterRng, every draw made whatever the outcome, in
// this order), the parameters they share, and the PixelOp that applies the drawn steps with
// apply_policy_op (pil_policy_ops.h). A test draws the same steps from the same sample.
//   TrivialAugmentWide  op = uniform_below(14) (Identity ... Equalize, torchvision's order),
//                       bin = uniform_below(num_magnitude_bins), negative = uniform_below(2) == 1
//   RandAugment         per step of num_ops: op = uniform_below(14), negative =
//                       uniform_below(2) == 1; the bin is `magnitude`
//   AutoAugment         sub-policy = uniform_below(25) of the policy's table; per operation of
//                       the two: applied = next_double() < its probability, negative =
//                       uniform_below(2) == 1; the bin its magnitude id (10 bins)
// A sign only matters to the signed operations (policy_op_signed); a bin only to those with a
// magnitude table. transforms v2's classes draw the same choices where they matter: v2 skips the
// bin and the sign where they do not, and draws a sign as rand() <= 0.5 and AutoAugment's
// "applied" as rand() <= p, probabilities within 2^-24 of 1/2 and p. So `version` changes the
// magnitudes only, and a sample draws the same steps in both versions.

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/channel_count.h"
#include "stoker/pipeline/ops/pil_policy_ops.h"
#include "stoker/pipeline/ops/torch_policy_ops.h"

namespace stoker::ops {

struct PolicyStepDraw {
  PolicyOp op = PolicyOp::kIdentity;
  int64_t bin = 0;
  bool negative = false;
};

inline PolicyStepDraw draw_trivial_augment_wide(CounterRng& rng, int64_t bins) {
  PolicyStepDraw step;
  step.op = static_cast<PolicyOp>(rng.uniform_below(14));
  step.bin = static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(bins)));
  step.negative = rng.uniform_below(2) == 1;
  return step;
}

inline std::vector<PolicyStepDraw> draw_rand_augment(CounterRng& rng, int64_t num_ops,
                                                     int64_t magnitude) {
  std::vector<PolicyStepDraw> steps;
  for (int64_t k = 0; k < num_ops; ++k) {
    PolicyStepDraw step;
    step.op = static_cast<PolicyOp>(rng.uniform_below(14));
    step.bin = magnitude;
    step.negative = rng.uniform_below(2) == 1;
    steps.push_back(step);
  }
  return steps;
}

// One operation of an AutoAugment sub-policy: applied with probability p, magnitude bin `bin`
// (-1: none, magnitude 0).
struct AutoAugmentEntry {
  PolicyOp op;
  double p;
  int bin;
};
using AutoAugmentSubPolicy = std::array<AutoAugmentEntry, 2>;

// torchvision's AutoAugmentPolicy tables ("imagenet", "cifar10", "svhn"), 25 sub-policies each.
inline const std::vector<AutoAugmentSubPolicy>& auto_augment_policy(const std::string& name) {
  using P = PolicyOp;
  static const std::vector<AutoAugmentSubPolicy> kImagenet = {
      {{{P::kPosterize, 0.4, 8}, {P::kRotate, 0.6, 9}}},
      {{{P::kSolarize, 0.6, 5}, {P::kAutoContrast, 0.6, -1}}},
      {{{P::kEqualize, 0.8, -1}, {P::kEqualize, 0.6, -1}}},
      {{{P::kPosterize, 0.6, 7}, {P::kPosterize, 0.6, 6}}},
      {{{P::kEqualize, 0.4, -1}, {P::kSolarize, 0.2, 4}}},
      {{{P::kEqualize, 0.4, -1}, {P::kRotate, 0.8, 8}}},
      {{{P::kSolarize, 0.6, 3}, {P::kEqualize, 0.6, -1}}},
      {{{P::kPosterize, 0.8, 5}, {P::kEqualize, 1.0, -1}}},
      {{{P::kRotate, 0.2, 3}, {P::kSolarize, 0.6, 8}}},
      {{{P::kEqualize, 0.6, -1}, {P::kPosterize, 0.4, 6}}},
      {{{P::kRotate, 0.8, 8}, {P::kColor, 0.4, 0}}},
      {{{P::kRotate, 0.4, 9}, {P::kEqualize, 0.6, -1}}},
      {{{P::kEqualize, 0.0, -1}, {P::kEqualize, 0.8, -1}}},
      {{{P::kInvert, 0.6, -1}, {P::kEqualize, 1.0, -1}}},
      {{{P::kColor, 0.6, 4}, {P::kContrast, 1.0, 8}}},
      {{{P::kRotate, 0.8, 8}, {P::kColor, 1.0, 2}}},
      {{{P::kColor, 0.8, 8}, {P::kSolarize, 0.8, 7}}},
      {{{P::kSharpness, 0.4, 7}, {P::kInvert, 0.6, -1}}},
      {{{P::kShearX, 0.6, 5}, {P::kEqualize, 1.0, -1}}},
      {{{P::kColor, 0.4, 0}, {P::kEqualize, 0.6, -1}}},
      {{{P::kEqualize, 0.4, -1}, {P::kSolarize, 0.2, 4}}},
      {{{P::kSolarize, 0.6, 5}, {P::kAutoContrast, 0.6, -1}}},
      {{{P::kInvert, 0.6, -1}, {P::kEqualize, 1.0, -1}}},
      {{{P::kColor, 0.6, 4}, {P::kContrast, 1.0, 8}}},
      {{{P::kEqualize, 0.8, -1}, {P::kEqualize, 0.6, -1}}},
  };
  static const std::vector<AutoAugmentSubPolicy> kCifar10 = {
      {{{P::kInvert, 0.1, -1}, {P::kContrast, 0.2, 6}}},
      {{{P::kRotate, 0.7, 2}, {P::kTranslateX, 0.3, 9}}},
      {{{P::kSharpness, 0.8, 1}, {P::kSharpness, 0.9, 3}}},
      {{{P::kShearY, 0.5, 8}, {P::kTranslateY, 0.7, 9}}},
      {{{P::kAutoContrast, 0.5, -1}, {P::kEqualize, 0.9, -1}}},
      {{{P::kShearY, 0.2, 7}, {P::kPosterize, 0.3, 7}}},
      {{{P::kColor, 0.4, 3}, {P::kBrightness, 0.6, 7}}},
      {{{P::kSharpness, 0.3, 9}, {P::kBrightness, 0.7, 9}}},
      {{{P::kEqualize, 0.6, -1}, {P::kEqualize, 0.5, -1}}},
      {{{P::kContrast, 0.6, 7}, {P::kSharpness, 0.6, 5}}},
      {{{P::kColor, 0.7, 7}, {P::kTranslateX, 0.5, 8}}},
      {{{P::kEqualize, 0.3, -1}, {P::kAutoContrast, 0.4, -1}}},
      {{{P::kTranslateY, 0.4, 3}, {P::kSharpness, 0.2, 6}}},
      {{{P::kBrightness, 0.9, 6}, {P::kColor, 0.2, 8}}},
      {{{P::kSolarize, 0.5, 2}, {P::kInvert, 0.0, -1}}},
      {{{P::kEqualize, 0.2, -1}, {P::kAutoContrast, 0.6, -1}}},
      {{{P::kEqualize, 0.2, -1}, {P::kEqualize, 0.6, -1}}},
      {{{P::kColor, 0.9, 9}, {P::kEqualize, 0.6, -1}}},
      {{{P::kAutoContrast, 0.8, -1}, {P::kSolarize, 0.2, 8}}},
      {{{P::kBrightness, 0.1, 3}, {P::kColor, 0.7, 0}}},
      {{{P::kSolarize, 0.4, 5}, {P::kAutoContrast, 0.9, -1}}},
      {{{P::kTranslateY, 0.9, 9}, {P::kTranslateY, 0.7, 9}}},
      {{{P::kAutoContrast, 0.9, -1}, {P::kSolarize, 0.8, 3}}},
      {{{P::kEqualize, 0.8, -1}, {P::kInvert, 0.1, -1}}},
      {{{P::kTranslateY, 0.7, 9}, {P::kAutoContrast, 0.9, -1}}},
  };
  static const std::vector<AutoAugmentSubPolicy> kSvhn = {
      {{{P::kShearX, 0.9, 4}, {P::kInvert, 0.2, -1}}},
      {{{P::kShearY, 0.9, 8}, {P::kInvert, 0.7, -1}}},
      {{{P::kEqualize, 0.6, -1}, {P::kSolarize, 0.6, 6}}},
      {{{P::kInvert, 0.9, -1}, {P::kEqualize, 0.6, -1}}},
      {{{P::kEqualize, 0.6, -1}, {P::kRotate, 0.9, 3}}},
      {{{P::kShearX, 0.9, 4}, {P::kAutoContrast, 0.8, -1}}},
      {{{P::kShearY, 0.9, 8}, {P::kInvert, 0.4, -1}}},
      {{{P::kShearY, 0.9, 5}, {P::kSolarize, 0.2, 6}}},
      {{{P::kInvert, 0.9, -1}, {P::kAutoContrast, 0.8, -1}}},
      {{{P::kEqualize, 0.6, -1}, {P::kRotate, 0.9, 3}}},
      {{{P::kShearX, 0.9, 4}, {P::kSolarize, 0.3, 3}}},
      {{{P::kShearY, 0.8, 8}, {P::kInvert, 0.7, -1}}},
      {{{P::kEqualize, 0.9, -1}, {P::kTranslateY, 0.6, 6}}},
      {{{P::kInvert, 0.9, -1}, {P::kEqualize, 0.6, -1}}},
      {{{P::kContrast, 0.3, 3}, {P::kRotate, 0.8, 4}}},
      {{{P::kInvert, 0.8, -1}, {P::kTranslateY, 0.0, 2}}},
      {{{P::kShearY, 0.7, 6}, {P::kSolarize, 0.4, 8}}},
      {{{P::kInvert, 0.6, -1}, {P::kRotate, 0.8, 4}}},
      {{{P::kShearY, 0.3, 7}, {P::kTranslateX, 0.9, 3}}},
      {{{P::kShearX, 0.1, 6}, {P::kInvert, 0.6, -1}}},
      {{{P::kSolarize, 0.7, 2}, {P::kTranslateY, 0.6, 7}}},
      {{{P::kShearY, 0.8, 4}, {P::kInvert, 0.8, -1}}},
      {{{P::kShearX, 0.7, 9}, {P::kTranslateY, 0.8, 3}}},
      {{{P::kShearY, 0.8, 5}, {P::kAutoContrast, 0.7, -1}}},
      {{{P::kShearX, 0.7, 2}, {P::kInvert, 0.1, -1}}},
  };
  return name == "cifar10" ? kCifar10 : name == "svhn" ? kSvhn : kImagenet;
}

// An AutoAugment sample's draws: the sub-policy (its row of the policy's table) and, for each
// of its two operations, whether it applies and is negated.
struct AutoAugmentDraw {
  size_t sub_policy = 0;
  std::array<bool, 2> applied{};
  std::array<bool, 2> negative{};
};

inline AutoAugmentDraw draw_auto_augment_sub_policy(CounterRng& rng, const std::string& policy) {
  const std::vector<AutoAugmentSubPolicy>& table = auto_augment_policy(policy);
  AutoAugmentDraw draw;
  draw.sub_policy = static_cast<size_t>(rng.uniform_below(table.size()));
  for (size_t k = 0; k < 2; ++k) {
    draw.applied[k] = rng.next_double() < table[draw.sub_policy][k].p;
    draw.negative[k] = rng.uniform_below(2) == 1;
  }
  return draw;
}

// The steps an AutoAugment sample applies (the drawn sub-policy's applied operations).
inline std::vector<PolicyStepDraw> draw_auto_augment(CounterRng& rng, const std::string& policy) {
  const AutoAugmentDraw draw = draw_auto_augment_sub_policy(rng, policy);
  const AutoAugmentSubPolicy& chosen = auto_augment_policy(policy)[draw.sub_policy];
  std::vector<PolicyStepDraw> steps;
  for (size_t k = 0; k < 2; ++k) {
    const AutoAugmentEntry& entry = chosen[k];
    if (draw.applied[k])
      steps.push_back({entry.op, entry.bin < 0 ? 0 : entry.bin, draw.negative[k]});
  }
  return steps;
}

// The parameters every policy takes: interpolation and fill, torchvision's, the version of its
// class and the backend whose pixels it equals.
inline std::vector<ParamSpec> policy_common_params() {
  return {ParamSpec::choice("interpolation", "nearest", {"nearest", "bilinear", "bicubic"},
                            "how geometric operations sample (PIL's NEAREST, BILINEAR or "
                            "BICUBIC)"),
          ParamSpec::reals("fill", {},
                           "colour outside a moved image: none 0, one number every channel, "
                           "else one per channel (each truncated, clipped to [0, 255])",
                           0, ParamSpec::kAnyCount),
          ParamSpec::choice("version", "v1", {"v1", "v2"},
                            "torchvision's transforms version whose class it equals (v2: "
                            "torchvision.transforms.v2's, whose Solarize threshold is 255 "
                            "times its linspace(1, 0))"),
          ParamSpec::choice("backend", "pil", {"pil", "tensor"},
                            "torchvision's backend whose pixels it equals: a PIL image's, or a "
                            "uint8 tensor's (grid_sample geometry, nearest or bilinear; torch's "
                            "blends; fills from 0 to 255)")};
}

// backend=tensor: the tensor kernels of transforms `kernels`, geometry NEAREST or BILINEAR,
// torchvision's fill as floats (empty: None).
struct PolicyTensorBackend {
  bool on = false;
  TorchKernels kernels = TorchKernels::kV1;
  bool bilinear = false;
  std::vector<float> fill;
};

// A policy's operation: the steps `draw` gives a sample, each through apply_policy_op with the
// magnitudes of `space` (`bins` bins) of transforms `version`.
class AugmentPolicyOp : public PixelOp {
 public:
  using Draw = std::function<std::vector<PolicyStepDraw>(CounterRng&)>;
  AugmentPolicyOp(PolicySpace space, PolicyVersion version, int64_t bins, PilFilter filter,
                  std::vector<uint8_t> fill, PolicyTensorBackend tensor,
                  const std::vector<int64_t>& shape, Draw draw)
      : space_(space),
        filter_(filter),
        bins_(bins),
        fill_(std::move(fill)),
        tensor_(std::move(tensor)),
        channels_(shape[0]),
        height_(shape[1]),
        width_(shape[2]),
        draw_(std::move(draw)) {
    for (int k = 0; k <= static_cast<int>(PolicyOp::kInvert); ++k) {
      magnitudes_.push_back(
          policy_magnitudes(space_, static_cast<PolicyOp>(k), bins_, height_, width_, version));
    }
  }

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    CounterRng rng = input.rng();
    for (const PolicyStepDraw& step : draw_(rng)) {
      const std::vector<double>& table = magnitudes_[static_cast<int>(step.op)];
      double magnitude = table.empty() ? 0.0 : table[static_cast<size_t>(step.bin)];
      if (step.negative && policy_op_signed(step.op)) magnitude = -magnitude;
      if (tensor_.on)
        apply_torch_policy_op(step.op, magnitude, tensor_.kernels, tensor_.bilinear, tensor_.fill,
                              pixels, channels_, height_, width_);
      else
        apply_policy_op(step.op, magnitude, fill_, pixels, channels_, height_, width_, filter_);
    }
    return Status::ok();
  }

 private:
  const PolicySpace space_;
  const PilFilter filter_;
  const int64_t bins_;
  const std::vector<uint8_t> fill_;
  const PolicyTensorBackend tensor_;
  const int64_t channels_;
  const int64_t height_;
  const int64_t width_;
  const Draw draw_;
  std::vector<std::vector<double>> magnitudes_;  // by PolicyOp
};

// The factory's checks (an image, a fill of 0, 1 or C numbers) and the op.
inline Result<std::shared_ptr<const PixelOp>> make_augment_policy_op(
    const std::string& op, const Params& params, const PixelContext& context, PolicySpace space,
    int64_t bins, AugmentPolicyOp::Draw draw) {
  if (Status s = context.check_image(op); !s.is_ok()) return s;
  const std::vector<double>& fill = params.reals("fill");
  const int64_t channels = context.shape[0];
  if (!fill.empty()) {
    if (Status s = check_per_channel(context, op, "fill", fill.size()); !s.is_ok()) return s;
  }
  const PolicyVersion version =
      params.choice("version") == "v2" ? PolicyVersion::kV2 : PolicyVersion::kV1;
  PolicyTensorBackend tensor;
  if (params.choice("backend") == "tensor") {
    if (params.choice("interpolation") == "bicubic")
      return invalid_argument(
          fmt::format("field '{}': {}: backend=tensor samples nearest or "
                      "bilinear (grid_sample), not bicubic",
                      context.field, op));
    for (double v : fill) {
      if (!(v >= 0 && v <= 255))
        return invalid_argument(
            fmt::format("field '{}': {}: backend=tensor fills from 0 to 255, "
                        "not {}",
                        context.field, op, v));
      tensor.fill.push_back(static_cast<float>(v));
    }
    tensor.on = true;
    tensor.kernels = version == PolicyVersion::kV2 ? TorchKernels::kV2 : TorchKernels::kV1;
    tensor.bilinear = params.choice("interpolation") == "bilinear";
  }
  return std::shared_ptr<const PixelOp>(std::make_shared<AugmentPolicyOp>(
      space, version, bins, pil_filter(params.choice("interpolation")), policy_fill(fill, channels),
      std::move(tensor), context.shape, std::move(draw)));
}

}  // namespace stoker::ops
