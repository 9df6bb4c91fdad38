// timm_mixup: timm.data.Mixup(mixup_alpha, cutmix_alpha, cutmix_minmax, prob, switch_prob, mode,
// correct_lam, label_smoothing, num_classes) on the finished batch: images (float32, after
// normalize) blended with or pasted from their mirror sample, labels made smoothed soft targets
// (timm_mixing.h). Equal to timm's Mixup for the same draws (ops/timm_mixup_test.cc).

#include <fmt/format.h>

#include <cmath>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/beta_draw.h"
#include "stoker/pipeline/ops/timm_mixing.h"

namespace stoker::ops {
namespace {

// rand_bbox's sides for weight lam, in T (float32 for elem and pair: numpy's float32 scalars).
template <typename T>
int64_t cut_side(int64_t side, T lam) {
  const T ratio = std::sqrt(T(1) - lam);
  return static_cast<int64_t>(static_cast<T>(side) * ratio);
}

int64_t uniform_in(CounterRng& rng, int64_t lo, int64_t hi) {  // numpy's randint(lo, hi)
  return lo + static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(hi - lo)));
}

int64_t clip(int64_t v, int64_t hi) { return std::clamp<int64_t>(v, 0, hi); }

// One decision: draws, box and weight.
TimmMixDraw draw_one(CounterRng& rng, const TimmMixParams& p, bool per_element, int64_t height,
                     int64_t width) {
  TimmMixDraw d;
  const bool both = p.mixup_alpha > 0 && p.cutmix_alpha > 0;
  d.u_prob = rng.next_double();
  if (both) d.u_switch = rng.next_double();
  d.use_cutmix = both ? d.u_switch < p.switch_prob : p.cutmix_alpha > 0;
  const double alpha = d.use_cutmix ? p.cutmix_alpha : p.mixup_alpha;
  d.lam_drawn = beta_draw(rng, alpha, alpha);
  if (per_element) d.lam_drawn = static_cast<float>(d.lam_drawn);
  if (!(d.u_prob < p.prob) || d.lam_drawn == 1.0) return d;
  double lam = d.lam_drawn;
  if (!d.use_cutmix) {
    d.mix = blend(lam);
    return d;
  }
  MixBox box;
  if (!p.cutmix_minmax.empty()) {
    const auto bound = [](int64_t side, double r) {
      return static_cast<int64_t>(static_cast<double>(side) * r);
    };
    const int64_t cut_h =
        uniform_in(rng, bound(height, p.cutmix_minmax[0]), bound(height, p.cutmix_minmax[1]));
    const int64_t cut_w =
        uniform_in(rng, bound(width, p.cutmix_minmax[0]), bound(width, p.cutmix_minmax[1]));
    box.top = uniform_in(rng, 0, height - cut_h + 1);
    box.left = uniform_in(rng, 0, width - cut_w + 1);
    box.bottom = box.top + cut_h;
    box.right = box.left + cut_w;
    d.box_draws = {cut_h, cut_w, box.top, box.left};
  } else {
    const int64_t cut_h =
        per_element ? cut_side(height, static_cast<float>(lam)) : cut_side(height, lam);
    const int64_t cut_w =
        per_element ? cut_side(width, static_cast<float>(lam)) : cut_side(width, lam);
    const int64_t cy = uniform_in(rng, 0, height);
    const int64_t cx = uniform_in(rng, 0, width);
    box.top = clip(cy - cut_h / 2, height);
    box.bottom = clip(cy + (cut_h + 1) / 2, height);
    box.left = clip(cx - cut_w / 2, width);
    box.right = clip(cx + (cut_w + 1) / 2, width);
    d.box_draws = {cy, cx};
  }
  if (p.correct_lam || !p.cutmix_minmax.empty())
    lam = 1.0 - static_cast<double>(box.area()) / static_cast<double>(height * width);
  if (per_element) lam = static_cast<float>(lam);
  d.mix = paste(box, lam);
  return d;
}

class TimmMixup : public BatchTransform {
 public:
  TimmMixup(TimmMixParams params, double smoothing, int64_t num_classes)
      : params_(std::move(params)), smoothing_(smoothing), num_classes_(num_classes) {}

  Result<std::vector<BatchFieldType>> outputs(
      const std::vector<BatchFieldType>& fields) const override {
    Result<std::vector<BatchFieldType>> out =
        soft_target_outputs(fields, "timm_mixup", num_classes_);
    if (!out.is_ok() || params_.cutmix_minmax.empty()) return out;
    const std::vector<int64_t>& shape =
        fields[find_mix_fields(fields, "").value().image].sample_shape;
    for (int64_t side : {shape[1], shape[2]})
      if (static_cast<int64_t>(side * params_.cutmix_minmax[0]) >=
          static_cast<int64_t>(side * params_.cutmix_minmax[1]))
        return invalid_argument(
            fmt::format("timm_mixup: cutmix_minmax [{}, {}] leaves no box size for images of {}x{}",
                        params_.cutmix_minmax[0], params_.cutmix_minmax[1], shape[2], shape[1]));
    return out;
  }

  Status apply(const BatchInput& input) const override {
    std::vector<BatchFieldType> types;
    for (const BatchFieldData& f : input.fields) types.push_back(*f.type);
    const MixFields fields = find_mix_fields(types, "timm_mixup").value();
    thread_local std::vector<int64_t> labels;
    if (Status s = read_labels(input, fields.label, num_classes_, "timm_mixup", labels); !s.is_ok())
      return s;
    const std::vector<int64_t>& shape = types[fields.image].sample_shape;
    CounterRng rng = input.rng();
    const std::vector<TimmMixDraw> draws =
        draw_timm_mix(rng, params_, input.size, shape[1], shape[2]);
    const size_t n = labels.size();
    std::vector<SampleMix> mixes(n);
    for (size_t i = 0; i < n; ++i) {
      if (params_.mode == TimmMixParams::kBatch) {
        mixes[i] = draws[0].mix;
      } else if (params_.mode == TimmMixParams::kElem) {
        mixes[i] = draws[i].mix;
      } else if (i < n / 2) {
        mixes[i] = mixes[n - 1 - i] = draws[i].mix;
      }
    }
    mix_images(input, fields.image, Partner::kFlip, mixes);
    const double off = smoothing_ / static_cast<double>(num_classes_);
    write_soft_targets(input, fields.label, Partner::kFlip, labels, num_classes_, mixes,
                       static_cast<float>(1.0 - smoothing_ + off), static_cast<float>(off));
    return Status::ok();
  }

 private:
  const TimmMixParams params_;
  const double smoothing_;
  const int64_t num_classes_;
};

}  // namespace

std::vector<TimmMixDraw> draw_timm_mix(CounterRng& rng, const TimmMixParams& params, int64_t n,
                                       int64_t height, int64_t width) {
  const int64_t count = params.mode == TimmMixParams::kBatch  ? 1
                        : params.mode == TimmMixParams::kPair ? n / 2
                                                              : n;
  std::vector<TimmMixDraw> draws;
  for (int64_t i = 0; i < count; ++i)
    draws.push_back(draw_one(rng, params, params.mode != TimmMixParams::kBatch, height, width));
  return draws;
}

OpSpec timm_mixup() {
  OpSpec op;
  op.name = "timm_mixup";
  op.role = OpRole::kBatch;
  op.backend = OpBackend::kBoth;
  op.python_class = "Mixup";
  op.doc = "MixUp and CutMix per batch, pair or element with smoothed soft targets (timm's Mixup)";
  op.params = {
      ParamSpec::real("mixup_alpha", 1.0, "MixUp's Beta parameter; 0: no MixUp").at_least(0),
      ParamSpec::real("cutmix_alpha", 0.0, "CutMix's Beta parameter; 0: no CutMix").at_least(0),
      ParamSpec::reals("cutmix_minmax", {},
                       "CutMix's box sides as fractions [min, max] drawn uniformly instead; [] "
                       "none",
                       0, 2)
          .in(0, 1),
      ParamSpec::real("prob", 1.0, "probability of mixing a batch, pair or element").in(0, 1),
      ParamSpec::real("switch_prob", 0.5, "probability of CutMix when both alphas are set")
          .in(0, 1),
      ParamSpec::choice("mode", "batch", {"batch", "pair", "elem"},
                        "one decision per batch, per pair of mirror samples or per element"),
      ParamSpec::flag("correct_lam", true, "the weight from the box clipped to the image"),
      ParamSpec::real("label_smoothing", 0.1, "label smoothing of the targets").in(0, 1),
      ParamSpec::integer("num_classes", 1000, "classes of the soft targets").at_least(1),
  };
  op.make_batch = [](const Params& params) -> Result<std::shared_ptr<const BatchTransform>> {
    TimmMixParams p;
    p.mixup_alpha = params.real("mixup_alpha");
    p.cutmix_alpha = params.real("cutmix_alpha");
    p.cutmix_minmax = params.reals("cutmix_minmax");
    if (p.cutmix_minmax.size() == 1)
      return invalid_argument("timm_mixup: cutmix_minmax must be [] or [min, max], not one number");
    if (!p.cutmix_minmax.empty()) {
      if (p.cutmix_minmax[0] > p.cutmix_minmax[1])
        return invalid_argument(
            fmt::format("timm_mixup: cutmix_minmax must be [min, max], not [{}, {}]",
                        p.cutmix_minmax[0], p.cutmix_minmax[1]));
      p.cutmix_alpha = 1.0;  // as timm's
    }
    if (p.mixup_alpha <= 0 && p.cutmix_alpha <= 0)
      return invalid_argument(
          "timm_mixup: mixup_alpha or cutmix_alpha must be above 0 (or cutmix_minmax given), "
          "not both 0");
    p.prob = params.real("prob");
    p.switch_prob = params.real("switch_prob");
    const std::string& mode = params.choice("mode");
    p.mode = mode == "batch"  ? TimmMixParams::kBatch
             : mode == "pair" ? TimmMixParams::kPair
                              : TimmMixParams::kElem;
    p.correct_lam = params.flag("correct_lam");
    return std::shared_ptr<const BatchTransform>(std::make_shared<TimmMixup>(
        std::move(p), params.real("label_smoothing"), params.integer("num_classes")));
  };
  return op;
}

}  // namespace stoker::ops
