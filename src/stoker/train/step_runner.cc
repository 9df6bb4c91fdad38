#include "stoker/train/step_runner.h"

// clang-format off: torch 2.4's clip_grad.h uses torch::stack, max and clamp unincluded.
#include <torch/types.h>
// clang-format on

#include <ATen/ops/cross_entropy_loss.h>
#include <fmt/format.h>
#include <torch/nn/utils/clip_grad.h>

#include <cmath>

#include "stoker/train/label_check.h"
#include "stoker/train/optimizers.h"
#include "stoker/util/stopwatch.h"

namespace stoker {

StepRunner::StepRunner(TrainingSetup& setup, int64_t step)
    : setup_(setup), step_(step), lr_(setup.schedule->lr_at(0)) {}

int64_t StepRunner::start_epoch(int64_t e) {
  end_epoch();
  range_.emplace(setup_.loader->epoch(e));
  epoch_ = e;
  left_ = range_->size();
  taken_ = 0;
  batch_number_ = setup_.loader->batches_per_epoch() - left_;
  data_seconds_ = 0;
  h2d_seconds_ = 0;
  return left_;
}

void StepRunner::take_first() {
  const Stopwatch t;
  {
    TraceSpan span(setup_.options.tracer, "train", "data");
    it_.emplace(range_->begin());
  }
  data_seconds_ += t.seconds();
  ++taken_;
  ++batch_number_;
}

void StepRunner::next_batch() {
  const Stopwatch t;
  {
    TraceSpan span(setup_.options.tracer, "train", "data");
    ++*it_;
  }
  data_seconds_ += t.seconds();
  ++taken_;
  ++batch_number_;
}

bool StepRunner::has_batch() { return it_ && *it_ != range_->end(); }

void StepRunner::end_epoch() {
  it_.reset();
  range_.reset();
}

std::pair<at::Tensor, at::Tensor> StepRunner::on_device(const Batch& batch, const Dataset& data) {
  const ModelSpec& spec = setup_.spec;
  // Evaluation's crop may be another size than training's (--val-crop-size).
  const bool eval = setup_.test_data && &data == setup_.test_data.get();
  // Soft targets (MixUp, CutMix): checked in range by the loader's batch operation. Hard ones
  // are checked from the host batch: reading the device's would wait for the device's work.
  const at::Tensor& labels = batch["label"];
  if (!labels.is_floating_point()) check_batch_labels(batch.host("label"), data, spec.num_classes);
  TraceSpan span(setup_.options.tracer, "train", "h2d");
  const at::Tensor& images = batch[setup_.input_field];
  InputNormalizer& normalize = *(eval ? setup_.eval_normalize : setup_.normalize);
  std::vector<int64_t> normalized = normalize.sample_shape();  // a clip's: [C, T, H * W]
  normalized.insert(normalized.begin(), -1);
  const at::Tensor input = images.is_floating_point()  // normalised by the loader
                               ? images.to(setup_.device, /*non_blocking=*/true)
                               : normalize(images.view(normalized));
  // The model's sample shape: evaluation's where it has one of its own ([C,H,W], [C,T,H,W]).
  const std::vector<int64_t>& eval_shape = setup_.eval_shape;
  std::vector<int64_t> shape =
      eval && eval_shape.size() == sample_shape(spec).size() ? eval_shape : sample_shape(spec);
  shape.insert(shape.begin(), -1);
  at::Tensor target = labels.to(setup_.device, /*non_blocking=*/true);
  const at::Tensor model_input = input.view(shape);
  // A video's clips decoded together (--clips-together) are samples of its label each.
  if (model_input.size(0) != target.size(0))
    target = target.repeat_interleave(model_input.size(0) / target.size(0), 0);
  return {model_input, target};
}

double StepRunner::forward_backward() {
  const bool ends_step = pending_ + 1 == setup_.options.accum || taken_ == left_;
  return forward_backward(batch(), ends_step);
}

double StepRunner::forward_backward(const Batch& batch, bool ends_step) {
  const TrainerOptions& o = setup_.options;
  const Stopwatch t;
  const auto [input, target] = on_device(batch, *setup_.train_data);
  h2d_seconds_ += t.seconds();
  at::Tensor loss;
  {
    TraceSpan span(o.tracer, "train", "forward");
    AutocastGuard autocast(o.amp, setup_.device.type());
    loss = at::cross_entropy_loss(logits(input, epoch_, batch_number_).to(at::kFloat), target, {},
                                  at::Reduction::Mean, -100, o.label_smoothing);
  }
  const double value = loss.item<double>();
  if (!std::isfinite(value) && !setup_.scaler.enabled()) {
    throw Error(invalid_argument(fmt::format(
        "training stopped: loss is {} at epoch {}, batch {}, step {}; lower the learning rate "
        "or clip gradients (--clip-grad)",
        std::isnan(value) ? "NaN" : fmt::format("{}", value), epoch_ + 1, batch_number_,
        step_ + 1)));
  }
  // The step's last backward starts averaging the gradients as they come, and carries this
  // rank's stop request to the others.
  if (setup_.reducer) setup_.reducer->prepare(ends_step, o.stop && o.stop->load() ? 1 : 0);
  try {
    TraceSpan span(o.tracer, "train", "backward");
    setup_.scaler.scale(o.accum > 1 ? loss / static_cast<double>(o.accum) : loss).backward();
  } catch (const std::exception& error) {
    throw Error(invalid_argument(fmt::format("{}: the backward pass of model {} failed: {}",
                                             where(epoch_, batch_number_), setup_.model->name(),
                                             exception_reason(error, o.verbose))));
  }
  ++pending_;
  return value;
}

at::Tensor StepRunner::logits(const at::Tensor& input, int64_t e, int64_t batch_number) {
  Result<at::Tensor> out =
      run_model(*setup_.model, input, setup_.spec.num_classes, setup_.options.verbose);
  if (!out.is_ok())
    throw Error(invalid_argument(where(e, batch_number) + ": " + out.status().message()));
  return std::move(out).value();
}

std::string StepRunner::where(int64_t e, int64_t batch_number) const {
  if (batch_number == 0) return fmt::format("evaluation after epoch {} stopped", e + 1);
  return fmt::format("training stopped at epoch {}, batch {}, step {}", e + 1, batch_number,
                     step_ + 1);
}

void StepRunner::optimizer_step() {
  const TrainerOptions& o = setup_.options;
  TraceSpan span(o.tracer, "train", "optimizer");
  // Averaged gradients are the same on every rank: so is found-inf, and every rank skips the
  // same steps.
  if (setup_.reducer) {
    TraceSpan wait(o.tracer, "train", "allreduce_wait");
    throw_if_error(setup_.reducer->synchronize());
  }
  const bool finite = setup_.scaler.unscale_and_check(setup_.params);
  if (finite) {
    if (o.clip_grad > 0) torch::nn::utils::clip_grad_norm_(setup_.params, o.clip_grad);
    lr_ = setup_.schedule->lr_at(step_);
    set_lr(*setup_.optimizer, lr_);
    setup_.optimizer->step();
  }
  setup_.scaler.update(!finite);
  setup_.optimizer->zero_grad();
  pending_ = 0;
  ++step_;
}

bool StepRunner::stop_requested() const {
  const TrainerOptions& o = setup_.options;
  return setup_.reducer ? setup_.reducer->votes() > 0 : o.stop && o.stop->load();
}

void StepRunner::ensure_batch() {
  if (it_ && has_batch()) return;
  start_epoch(range_ ? epoch_ + 1 : setup_.loader->state().epoch);
  take_first();
}

void StepRunner::data_step() {
  ensure_batch();
  on_device(batch(), *setup_.train_data);
  next_batch();
}

void StepRunner::resident_step() {
  ensure_batch();
  forward_backward(batch(), pending_ + 1 == setup_.options.accum);
  if (optimizer_step_due()) optimizer_step();
}

void StepRunner::train_step() {
  ensure_batch();
  forward_backward();
  if (optimizer_step_due()) optimizer_step();
  next_batch();
  if (!has_batch() && pending_ > 0) optimizer_step();  // the epoch's last
}

}  // namespace stoker
