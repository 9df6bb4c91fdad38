#include "stoker/train/training_run.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <fmt/format.h>
#include <torch/utils.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "stoker/distributed/gradient_reducer.h"
#include "stoker/distributed/process_group.h"
#include "stoker/store/shard_source.h"
#include "stoker/train/device_memory.h"
#include "stoker/train/rank_agreement.h"
#include "stoker/train/run_record.h"
#include "stoker/train/video_accuracy.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/output_rescue.h"
#include "stoker/util/stopwatch.h"

namespace stoker {

TrainingRun::TrainingRun(TrainerOptions options)
    : setup_(set_up_training(std::move(options))),
      progress_(setup_->leads() ? setup_->options.out : nullptr,
                setup_->options.progress.value_or(default_progress_style(setup_->options.out))),
      keeper_(*setup_),
      steps_(*setup_, keeper_.resumed_step()) {
  const TrainerOptions& o = setup_->options;
  if (keeper_.resumed()) {
    resumed_loss_sum_ = keeper_.resumed()->epoch_loss_sum;
    resumed_samples_ = keeper_.resumed()->epoch_samples;
  }
  // The same starting point on every rank; also the barrier after which rank 0 may replace the
  // checkpoint every rank has read.
  const LoaderState start = setup_->loader->state();
  check_ranks_agree(o.process_group,
                    {{"step", static_cast<double>(steps_.step())},
                     {"epoch", static_cast<double>(start.epoch)},
                     {"position", static_cast<double>(start.position)}},
                    "every rank must resume from the same checkpoint, so --checkpoint-dir must "
                    "be a directory they all share");
  if (!o.save_model.empty() && setup_->leads()) throw_if_error(check_output_path(o.save_model));
  if (!o.log_path.empty() && setup_->leads()) {
    if (keeper_.resumed()) throw_if_error(RunLog::trim_for_resume(o.log_path, steps_.step()));
    log_.emplace(RunLog::open(o.log_path).value_or_throw());
  }
}

TrainResult TrainingRun::run() {
  const Stopwatch start;
  const TrainingSetup& s = *setup_;
  const TrainerOptions& o = s.options;
  const std::string& resumed_from = keeper_.resumed() ? keeper_.resumed()->path : "";
  TrainResult result;
  result.steps = steps_.step();
  if (keeper_.resumed()) {
    progress_.print(fmt::format("resuming from {}: epoch {}, step {}", resumed_from,
                                s.loader->state().epoch + 1, steps_.step()));
    for (const std::string& note : keeper_.resumed()->notes) progress_.print(note);
  }
  for (const std::string& warning : s.warnings) progress_.print(warning);
  if (log_)
    throw_if_error(
        log_->append("run", run_record(s, steps_.step(), resumed_from, keeper_.data_files())));
  progress_.print(
      fmt::format("training {} on {} ({} samples, {} classes; {}) for {} epochs: batch {}, {} lr "
                  "{:g}, amp {}, {} threads, {} workers, device {}",
                  s.model->name(), s.train_data->describe(),
                  s.train_data->size() * static_cast<uint64_t>(s.train_per_record),
                  s.spec.num_classes, s.normalization.phrase, o.epochs, o.batch_size,
                  o.optimizer.name, o.optimizer.lr, to_string(o.amp), s.threads,
                  s.workers.to_string(), s.device.str()) +
      (o.process_group ? fmt::format(", {} ranks over {}", s.world_size,
                                     kDistBackendNames.name(o.process_group->backend()))
                       : "") +
      (o.sample_cost.count() > 0
           ? fmt::format(", a synthetic cost of {} us per sample", o.sample_cost.count())
           : ""));
  if (!s.eval_note.empty()) progress_.print(s.eval_note);

  result.epoch = std::min(s.loader->state().epoch, o.epochs);
  if (s.loader->state().epoch >= o.epochs) {
    progress_.print(fmt::format("the checkpoint is past epoch {}: nothing to train", o.epochs));
  }
  for (int64_t e = s.loader->state().epoch; e < o.epochs; ++e) {
    result.epoch = e + 1;
    EpochMetrics metrics;
    if (!train_epoch(e, metrics, result)) break;
    result.epochs.push_back(metrics);
    if (result.reason != StopReason::kCompleted) break;
  }
  result.steps = steps_.step();
  result.seconds = start.seconds();
  result.tuning = s.loader->tuning();
  say_tuning(/*at_end=*/true);
  say_source_notes();

  if (result.reason != StopReason::kStopRequested && !o.save_model.empty() && s.leads()) {
    result.model_error = write_or_rescue(
        "the trained model", o.save_model,
        [&](const std::string& path) {
          return s.model->save(path, {s.normalization.mean, s.normalization.std});
        },
        &result.model);
  }
  std::string summary = fmt::format(
      "{} {}: {} epoch{}, {} steps in {:.1f} s",
      result.reason == StopReason::kCompleted ? "trained" : "stopped", s.model->name(),
      result.epochs.size(), result.epochs.size() == 1 ? "" : "s", result.steps, result.seconds);
  if (!result.epochs.empty() && result.epochs.back().test_accuracy) {
    summary += fmt::format("; test acc {:.4f}, test loss {:.4f}",
                           *result.epochs.back().test_accuracy, *result.epochs.back().test_loss);
    if (result.epochs.back().test_video_accuracy)
      summary += fmt::format(", video acc {:.4f}", *result.epochs.back().test_video_accuracy);
  }
  if (!result.checkpoint.empty()) summary += "; checkpoint " + result.checkpoint;
  if (!result.model.empty()) summary += "; model saved to " + result.model;
  progress_.print(summary);
  keeper_.release();  // nothing more is written
  return result;
}

bool TrainingRun::train_epoch(int64_t e, EpochMetrics& m, TrainResult& result) {
  const TrainingSetup& s = *setup_;
  const TrainerOptions& o = s.options;
  // This rank's training loss summed over its samples (rank 0's includes the part of the epoch
  // before the checkpoint this run resumed from), and their count.
  double loss_sum = resumed_loss_sum_;
  int64_t loss_samples = s.leads() ? resumed_samples_ : 0;
  // An epoch resumed mid-way reports all its samples; its rate counts only this run's.
  m.samples = resumed_samples_;
  m.resumed_samples = resumed_samples_;
  resumed_loss_sum_ = 0;
  resumed_samples_ = 0;
  const AllReduceStats reduced_before = s.reducer ? s.reducer->stats() : AllReduceStats();
  const int64_t left = steps_.start_epoch(e);
  const int64_t batches_done = s.loader->batches_per_epoch() - left;
  progress_.start_epoch(e + 1, o.epochs, left);

  if (o.on_batch) o.on_batch(batches_done);
  reset_device_memory_peak(s.device);
  const Stopwatch epoch_start;
  int64_t batches = 0;
  steps_.take_first();
  // The epoch's loss over every rank, measured like a whole one.
  auto measure_epoch = [&] {
    const std::vector<double> sums =
        sum_over_ranks(o.process_group, {loss_sum, static_cast<double>(loss_samples)});
    measure(e, sums[0], static_cast<int64_t>(sums[1]), epoch_start, m);
    if (s.reducer) {
      const AllReduceStats& now = s.reducer->stats();
      m.allreduces = now.reductions - reduced_before.reductions;
      m.allreduce_seconds = now.reduce_seconds - reduced_before.reduce_seconds;
      m.allreduce_exposed_seconds = now.exposed_seconds - reduced_before.exposed_seconds;
    }
    return sums;
  };
  while (steps_.has_batch()) {
    const int64_t size = steps_.batch().size();
    const double loss = steps_.forward_backward();
    loss_sum += loss * size;
    loss_samples += size;
    m.samples += size * s.world_size;  // every rank's batch is as large (sampler.h)
    step_loss_sum_ += loss * size;
    step_loss_samples_ += size;
    if (steps_.optimizer_step_due()) {
      steps_.optimizer_step();
      log_step(e, m.samples);
    }
    progress_.update(++batches, loss_sum / loss_samples, m.samples);
    if (o.on_batch) o.on_batch(batches_done + batches);
    // Stop only between optimizer steps and inside the epoch: a stop after its last batch waits
    // for the epoch's end (evaluation, log, checkpoint).
    const StopReason reason = stop_reason();
    if (reason != StopReason::kCompleted && steps_.pending() == 0 && s.loader->state().epoch == e) {
      result.reason = reason;
      // The part of the epoch that ran, measured like a whole one.
      const std::vector<double> sums = measure_epoch();
      progress_.print(fmt::format("{}  (stopped after {} of {} batches)", m.to_line(),
                                  batches_done + batches, s.loader->batches_per_epoch()));
      result.checkpoint = keeper_.save(steps_.step(), sums[0], static_cast<int64_t>(sums[1]));
      steps_.end_epoch();
      return false;
    }
    steps_.next_batch();
  }
  if (steps_.pending() > 0) steps_.optimizer_step();

  measure_epoch();
  if (o.eval) evaluate(e, m);
  m.device_peak_bytes = device_memory_peak(s.device);
  progress_.print(m.to_line());
  say_tuning(/*at_end=*/false);
  say_source_notes();
  if (log_) throw_if_error(log_->append("epoch", m.to_json()));
  result.checkpoint = keeper_.save(steps_.step(), 0, 0);
  steps_.end_epoch();
  if (e + 1 < o.epochs) result.reason = stop_reason();  // after the last epoch: completed
  return true;
}

void TrainingRun::log_step(int64_t e, int64_t samples) {
  const TrainerOptions& o = setup_->options;
  if (o.log_path.empty() || o.log_every <= 0 || steps_.step() % o.log_every != 0) return;
  const std::vector<double> step_loss =
      sum_over_ranks(o.process_group, {step_loss_sum_, static_cast<double>(step_loss_samples_)});
  const nlohmann::json record = {{"epoch", e + 1},
                                 {"step", steps_.step()},
                                 {"lr", steps_.lr()},
                                 {"loss", step_loss[0] / step_loss[1]},
                                 {"samples", samples}};
  if (log_) throw_if_error(log_->append("step", record.dump()));
  step_loss_sum_ = 0;
  step_loss_samples_ = 0;
}

void TrainingRun::say_tuning(bool at_end) {
  const std::optional<TuningReport> tuning = setup_->loader->tuning();
  if (!tuning || tuning_said_ || (!tuning->settled && !at_end)) return;
  progress_.print("workers auto: " + tuning->summary());
  tuning_said_ = true;
}

void TrainingRun::say_source_notes() {
  const auto say = [this](const Dataset& data, int64_t& said) {
    const ShardSourceStats stats = data.source().stats();
    const std::string line = new_notes_line(stats, said);
    if (line.empty()) return;
    progress_.print("note: " + line);
    said = stats.notes;
  };
  say(*setup_->train_data, train_notes_said_);
  if (setup_->test_data) say(*setup_->test_data, test_notes_said_);
}

void TrainingRun::measure(int64_t e, double loss_sum, int64_t loss_samples,
                          const Stopwatch& epoch_start, EpochMetrics& m) const {
  m.epoch = e + 1;
  m.epochs = setup_->options.epochs;
  m.steps = steps_.step();
  m.lr = steps_.lr();
  m.train_loss = loss_samples > 0 ? loss_sum / loss_samples : 0.0;
  m.seconds = epoch_start.seconds();
  m.data_seconds = steps_.data_seconds();
  m.h2d_seconds = steps_.h2d_seconds();
  m.compute_seconds = std::max(0.0, m.seconds - m.data_seconds - m.h2d_seconds);
}

void TrainingRun::evaluate(int64_t e, EpochMetrics& m) {
  TrainingSetup& s = *setup_;
  TraceSpan span(s.options.tracer, "train", "eval");
  const Stopwatch start;
  torch::NoGradGuard no_grad;
  s.model->train(false);
  double loss_sum = 0;
  int64_t correct = 0;
  int64_t samples = 0;
  // This rank's shard without the padding that evens the shards out: each sample counts once.
  const int64_t test_samples = static_cast<int64_t>(s.test_data->size()) * s.test_per_record;
  const int64_t own = unpadded_samples(test_samples, 0, s.rank, s.world_size);
  // Several clips of each video: sample i (in order, this rank's j-th being j * W + rank) is a
  // clip of video i / K. Samples skipped as bad would shift them: no video accuracy then.
  const int64_t clips = s.options.eval_clips_per_video;
  std::optional<VideoAccuracy> videos;
  if (clips > 1) videos.emplace(test_samples / clips, s.spec.num_classes);
  bool skipped = false;
  for (Batch& batch : s.test_loader->epoch(e)) {
    skipped = skipped || batch.skipped() > 0;
    const int64_t n = std::min<int64_t>(batch.size(), own - samples);
    if (n <= 0) continue;
    auto [input, target] = steps_.on_device(batch, *s.test_data);
    if (n < batch.size()) {
      input = input.narrow(0, 0, n);
      target = target.narrow(0, 0, n);
    }
    at::Tensor scores;
    {
      AutocastGuard autocast(s.options.amp, s.device.type());
      scores = steps_.logits(input, e, 0).to(at::kFloat);
    }
    loss_sum += at::cross_entropy_loss(scores, target, {}, at::Reduction::Sum, -100,
                                       s.options.label_smoothing)
                    .item<double>();
    correct += scores.argmax(1).eq(target).sum().item<int64_t>();
    if (videos) {
      const at::Tensor index = at::arange(samples, samples + n, at::kLong) * s.world_size + s.rank;
      videos->add(scores, index.div(clips, "floor"), target);
    }
    samples += n;
  }
  s.model->train(true);
  if (videos) {
    const bool any_skipped = sum_over_ranks(s.options.process_group, {skipped ? 1.0 : 0.0})[0] > 0;
    if (!any_skipped) m.test_video_accuracy = videos->accuracy(s.options.process_group);
  }
  const std::vector<double> sums =
      sum_over_ranks(s.options.process_group,
                     {loss_sum, static_cast<double>(correct), static_cast<double>(samples)});
  m.test_loss = sums[0] / sums[2];
  m.test_accuracy = sums[1] / sums[2];
  m.eval_seconds = start.seconds();
}

StopReason TrainingRun::stop_reason() const {
  // Distributed: the requests voted with the last step's gradients, the same on every rank.
  if (steps_.stop_requested()) return StopReason::kStopRequested;
  const int64_t max_steps = setup_->options.max_steps;
  if (max_steps > 0 && steps_.step() >= max_steps) return StopReason::kStepLimit;
  return StopReason::kCompleted;
}

}  // namespace stoker
