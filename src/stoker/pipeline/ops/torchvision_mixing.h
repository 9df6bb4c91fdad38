#pragma once
// torchvision.transforms.v2's MixUp and CutMix on a batch (ops/mixup.cc, cutmix.cc and their
// RandomChoice, mixup_cutmix.cc): each sample mixed with the previous one (roll(1, 0)), the
// labels one-hot over num_classes and mixed alike (batch_mixing.h). The draws, from the batch's
// stream (batch_transform.h), in this order:
//   MixUp   lam ~ Beta(alpha, alpha), rounded to float32 (torch samples it in float32)
//   CutMix  lam as MixUp's, then the box's centre r_x uniform in [0, W), r_y in [0, H): its
//           half sides int(0.5 sqrt(1 - lam) W) and (... H), clamped to the image; the labels'
//           weight 1 - box area / (W H) (torchvision's lam_adjusted)

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/batch_mixing.h"
#include "stoker/pipeline/ops/beta_draw.h"

namespace stoker::ops {

inline double draw_mixup_lambda(CounterRng& rng, double alpha) {
  return static_cast<float>(beta_draw(rng, alpha, alpha));
}

// CutMix's draws, its box and its labels' weight, as torchvision's CutMix.make_params.
struct CutMixDraw {
  double drawn = 1;  // lam
  int64_t r_x = 0, r_y = 0;
  MixBox box;
  double lam = 1;  // lam_adjusted
};

inline CutMixDraw draw_cutmix(CounterRng& rng, double alpha, int64_t height, int64_t width) {
  CutMixDraw d;
  d.drawn = draw_mixup_lambda(rng, alpha);
  d.r_x = static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(width)));
  d.r_y = static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(height)));
  const int64_t r_x = d.r_x, r_y = d.r_y;
  const double r = 0.5 * std::sqrt(1.0 - d.drawn);
  const auto half_w = static_cast<int64_t>(r * static_cast<double>(width));
  const auto half_h = static_cast<int64_t>(r * static_cast<double>(height));
  d.box.left = std::max<int64_t>(r_x - half_w, 0);
  d.box.top = std::max<int64_t>(r_y - half_h, 0);
  d.box.right = std::min(r_x + half_w, width);
  d.box.bottom = std::min(r_y + half_h, height);
  d.lam = 1.0 - static_cast<double>(d.box.area()) / static_cast<double>(width * height);
  return d;
}

// MixUp (cutmix false) or CutMix of the batch with weight `alpha`, as torchvision's; `op` names
// the operation in a label's error.
inline Status torchvision_mix(const BatchInput& input, CounterRng& rng, bool cutmix, double alpha,
                              int64_t num_classes, const std::string& op) {
  std::vector<BatchFieldType> types;
  for (const BatchFieldData& f : input.fields) types.push_back(*f.type);
  Result<MixFields> found = find_mix_fields(types, op);
  if (!found.is_ok()) return found.status();
  const MixFields fields = found.value();
  thread_local std::vector<int64_t> labels;
  if (Status s = read_labels(input, fields.label, num_classes, op, labels); !s.is_ok()) return s;
  SampleMix mix;
  if (cutmix) {
    const std::vector<int64_t>& shape = types[fields.image].sample_shape;
    const CutMixDraw d = draw_cutmix(rng, alpha, shape[1], shape[2]);
    mix = paste(d.box, d.lam);
  } else {
    mix = blend(draw_mixup_lambda(rng, alpha));
  }
  const std::vector<SampleMix> mixes(labels.size(), mix);
  mix_images(input, fields.image, Partner::kRoll, mixes);
  write_soft_targets(input, fields.label, Partner::kRoll, labels, num_classes, mixes);
  return Status::ok();
}

// A torchvision mixing operation: `mix(input)` on each batch, the label a soft target.
template <typename Mix>
class TorchvisionMixing : public BatchTransform {
 public:
  TorchvisionMixing(std::string op, int64_t num_classes, Mix mix)
      : op_(std::move(op)), num_classes_(num_classes), mix_(std::move(mix)) {}
  Result<std::vector<BatchFieldType>> outputs(
      const std::vector<BatchFieldType>& fields) const override {
    return soft_target_outputs(fields, op_, num_classes_);
  }
  Status apply(const BatchInput& input) const override { return mix_(input, op_, num_classes_); }

 private:
  const std::string op_;
  const int64_t num_classes_;
  const Mix mix_;
};

template <typename Mix>
std::shared_ptr<const BatchTransform> torchvision_mixing(std::string op, int64_t num_classes,
                                                         Mix mix) {
  return std::make_shared<TorchvisionMixing<Mix>>(std::move(op), num_classes, std::move(mix));
}

// The OpSpec of torchvision's MixUp (cutmix false) or CutMix as operation `name` (python_class
// and doc as OpSpec's): parameters alpha and num_classes, one mix per batch from its stream.
inline OpSpec torchvision_mixing_spec(std::string name, std::string python_class, std::string doc,
                                      bool cutmix) {
  OpSpec op;
  op.name = std::move(name);
  op.role = OpRole::kBatch;
  op.python_class = std::move(python_class);
  op.backend = OpBackend::kBoth;
  op.doc = std::move(doc);
  op.params = {
      ParamSpec::real("alpha", 1.0, "the Beta distribution's parameter of the weight").above(0),
      ParamSpec::integer("num_classes", 1000, "classes of the soft targets").at_least(1),
  };
  op.make_batch = [cutmix, name = op.name](
                      const Params& params) -> Result<std::shared_ptr<const BatchTransform>> {
    const double alpha = params.real("alpha");
    return torchvision_mixing(
        name, params.integer("num_classes"),
        [alpha, cutmix](const BatchInput& input, const std::string& op, int64_t num_classes) {
          CounterRng rng = input.rng();
          return torchvision_mix(input, rng, cutmix, alpha, num_classes, op);
        });
  };
  return op;
}

}  // namespace stoker::ops
