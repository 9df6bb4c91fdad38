// augmix: torchvision's AugMix(severity, mixture_width, chain_depth, alpha, all_ops,
// interpolation, fill) (transforms v1, or v2 with kernels=v2) on a PIL image, for a uint8
// image [C, H, W], C 1 or 3: the image made a tensor, each chain's operations as _apply_op
// (v2: _apply_image_or_video_transform) runs them on a tensor (torchvision_tensor_ops.h; affine
// and rotate through grid_sample, NEAREST or BILINEAR; v2 rotates by the angle modulo 360, 0
// leaving the image as it is), the mix in float32: m0 * image, then + (w_i * m1) * chain i's
// image (each product and sum rounded), truncated to uint8.
//
// The operations and magnitudes of its _augmentation_space(10, (H, W)): ShearX, ShearY
// (linspace(0, 0.3)), TranslateX, TranslateY (linspace(0, W / 3), (0, H / 3), truncated),
// Rotate (0, 30), Posterize (4 - round(bin / 2.25) bits), Solarize (linspace(255, 0); v2:
// 255 * linspace(1, 0) as float32),
// AutoContrast, Equalize, and with all_ops Brightness, Color, Contrast, Sharpness (factor
// 1 + linspace(0, 0.9)); the signed ones negated half the time.
//
// The draws: augmix.h. ops/augmix_test.cc runs torchvision's own AugMix on the same draws.

#include "stoker/pipeline/ops/augmix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/augment_policies.h"
#include "stoker/pipeline/ops/beta_draw.h"
#include "stoker/pipeline/ops/channel_count.h"
#include "stoker/pipeline/ops/channel_table.h"
#include "stoker/pipeline/ops/torch_policy_ops.h"
#include "stoker/pipeline/ops/torchvision_tensor_ops.h"

namespace stoker::ops {

namespace {

using P = PolicyOp;

// _augmentation_space's operations, in its order.
const std::vector<PolicyOp> kAugMixOps = {
    P::kShearX,    P::kShearY,   P::kTranslateX,   P::kTranslateY, P::kRotate,
    P::kPosterize, P::kSolarize, P::kAutoContrast, P::kEqualize,   P::kBrightness,
    P::kColor,     P::kContrast, P::kSharpness};

}  // namespace

const std::vector<PolicyOp>& augmix_ops() { return kAugMixOps; }

AugMixDraw draw_augmix(CounterRng& rng, const AugMixSettings& settings) {
  AugMixDraw draw;
  const std::vector<double> m = dirichlet_draw(rng, settings.alpha, 2);
  draw.original = static_cast<float>(m[0]);
  draw.augmented = static_cast<float>(m[1]);
  for (double w : dirichlet_draw(rng, settings.alpha, settings.width))
    draw.weights.push_back(static_cast<float>(w));
  const size_t count = settings.all_ops ? kAugMixOps.size() : kAugMixOps.size() - 4;
  for (int64_t i = 0; i < settings.width; ++i) {
    const int64_t depth = settings.depth > 0 ? settings.depth : 1 + rng.uniform_below(3);
    std::vector<PolicyStepDraw>& chain = draw.chains.emplace_back();
    for (int64_t k = 0; k < depth; ++k) {
      PolicyStepDraw& step = chain.emplace_back();
      step.op = kAugMixOps[rng.uniform_below(count)];
      const bool v1 = settings.kernels == TorchKernels::kV1;
      const bool unsigned_op = step.op == P::kPosterize || step.op == P::kSolarize;
      const bool fixed = step.op == P::kAutoContrast || step.op == P::kEqualize;
      if (v1 || !fixed)
        step.bin =
            static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(settings.severity)));
      if (v1 || !(fixed || unsigned_op)) step.negative = rng.uniform_below(2) == 1;
    }
  }
  return draw;
}

namespace {

// The magnitude of `step` on an image [height, width] (0 for AutoContrast and Equalize).
double augmix_magnitude(const PolicyStepDraw& step, TorchKernels kernels, int64_t height,
                        int64_t width) {
  const auto bin_of = [&](double end) {
    return static_cast<double>(torch_linspace(0.0, end, 10)[static_cast<size_t>(step.bin)]);
  };
  double magnitude = 0;
  switch (step.op) {
    case P::kShearX:
    case P::kShearY:
      magnitude = bin_of(0.3);
      break;
    case P::kTranslateX:
      magnitude = bin_of(static_cast<double>(width) / 3.0);
      break;
    case P::kTranslateY:
      magnitude = bin_of(static_cast<double>(height) / 3.0);
      break;
    case P::kRotate:
      magnitude = bin_of(30.0);
      break;
    case P::kPosterize:
      return 4.0 - static_cast<double>(
                       std::nearbyint(static_cast<float>(step.bin) / static_cast<float>(2.25)));
    case P::kSolarize:  // v2's threshold, 255 * linspace(1, 0): apply_torch_policy_op rounds it
      if (kernels == TorchKernels::kV2)
        return 255.0 *
               static_cast<double>(torch_linspace(1.0, 0.0, 10)[static_cast<size_t>(step.bin)]);
      return static_cast<double>(torch_linspace(255.0, 0.0, 10)[static_cast<size_t>(step.bin)]);
    case P::kBrightness:
    case P::kColor:
    case P::kContrast:
    case P::kSharpness:
      magnitude = bin_of(0.9);
      break;
    default:
      return 0;
  }
  return step.negative ? -magnitude : magnitude;
}

// _apply_op on the tensor image.
void apply_augmix_step(const PolicyStepDraw& step, const AugMixSettings& settings, uint8_t* pixels,
                       int64_t channels, int64_t height, int64_t width) {
  apply_torch_policy_op(step.op, augmix_magnitude(step, settings.kernels, height, width),
                        settings.kernels, settings.bilinear, settings.fill, pixels, channels,
                        height, width);
}

class AugMix : public PixelOp {
 public:
  AugMix(AugMixSettings settings, const std::vector<int64_t>& shape)
      : settings_(std::move(settings)), channels_(shape[0]), height_(shape[1]), width_(shape[2]) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    CounterRng rng = input.rng();
    const AugMixDraw draw = draw_augmix(rng, settings_);
    const size_t size = static_cast<size_t>(channels_ * height_ * width_);
    std::vector<float> mix(size);
    for (size_t p = 0; p < size; ++p) mix[p] = draw.original * static_cast<float>(pixels[p]);
    std::vector<uint8_t> chain_image(size);
    for (size_t i = 0; i < draw.chains.size(); ++i) {
      std::copy(pixels, pixels + size, chain_image.begin());
      for (const PolicyStepDraw& step : draw.chains[i])
        apply_augmix_step(step, settings_, chain_image.data(), channels_, height_, width_);
      const float weight = draw.weights[i] * draw.augmented;
      for (size_t p = 0; p < size; ++p) {
        const float product = weight * static_cast<float>(chain_image[p]);
        mix[p] += product;
      }
    }
    for (size_t p = 0; p < size; ++p) pixels[p] = torch_truncated(mix[p]);
    return Status::ok();
  }

 private:
  const AugMixSettings settings_;
  const int64_t channels_, height_, width_;
};

}  // namespace

OpSpec augmix() {
  OpSpec op;
  op.name = "augmix";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kBoth;
  op.python_class = "AugMix";
  op.doc =
      "Chains of operations mixed with the image (torchvision's AugMix on a PIL image: its "
      "tensor kernels, to the pixel)";
  op.params = {
      ParamSpec::integer("severity", 3, "the magnitude bins drawn from").in(1, 10),
      ParamSpec::integer("mixture_width", 3, "the chains").in(1, 64),
      ParamSpec::integer("chain_depth", -1, "operations per chain; below 1: 1 to 3 drawn")
          .in(-1000000, 64),
      ParamSpec::real("alpha", 1.0, "the Dirichlet and Beta draws' parameter").in(0.001, 1000),
      ParamSpec::flag("all_ops", true, "with Brightness, Color, Contrast and Sharpness"),
      ParamSpec::choice("kernels", "v1", {"v1", "v2"},
                        "torchvision's transforms version whose draws and tensor kernels it "
                        "equals (v2: torchvision.transforms.v2.AugMix)"),
      ParamSpec::choice("interpolation", "bilinear", {"nearest", "bilinear"},
                        "how geometric operations sample (grid_sample's)"),
      ParamSpec::reals("fill", {},
                       "colour outside a moved image: none (zeros padding), one number every "
                       "channel, else one per channel",
                       0, ParamSpec::kAnyCount)
          .in(0, 255)};
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    if (Status s = context.check_image("augmix"); !s.is_ok()) return s;
    AugMixSettings settings;
    settings.severity = params.integer("severity");
    settings.width = params.integer("mixture_width");
    settings.depth = params.integer("chain_depth");
    settings.alpha = params.real("alpha");
    settings.all_ops = params.flag("all_ops");
    settings.bilinear = params.choice("interpolation") == "bilinear";
    if (params.choice("kernels") == "v2") settings.kernels = TorchKernels::kV2;
    const std::vector<double>& fill = params.reals("fill");
    if (!fill.empty()) {
      if (Status s = check_per_channel(context, "augmix", "fill", fill.size()); !s.is_ok())
        return s;
    }
    for (double v : fill) settings.fill.push_back(static_cast<float>(v));
    return std::shared_ptr<const PixelOp>(std::make_shared<AugMix>(settings, context.shape));
  };
  return op;
}

}  // namespace stoker::ops
