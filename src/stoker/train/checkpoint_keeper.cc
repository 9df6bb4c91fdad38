#include "stoker/train/checkpoint_keeper.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

#include "stoker/distributed/process_group.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/trace/tracer.h"

namespace stoker {

CheckpointKeeper::CheckpointKeeper(TrainingSetup& setup) : setup_(setup) {
  const TrainerOptions& o = setup_.options;
  if (o.checkpoint_dir.empty() && o.log_path.empty()) return;
  data_files_ = file_blocks(setup_.train_data->source()).value_or_throw();
  if (o.checkpoint_dir.empty()) return;
  if (setup_.leads()) {  // the other ranks only read
    throw_if_error(prepare_checkpoint_dir(o.checkpoint_dir));
    lock_.emplace(lock_checkpoint_dir(o.checkpoint_dir).value_or_throw());
    if (const int removed = remove_partial_checkpoints(o.checkpoint_dir); removed > 0) {
      setup_.warnings.push_back(
          fmt::format("note: removed {} checkpoint{} whose writing was cut short in {}", removed,
                      removed == 1 ? "" : "s", o.checkpoint_dir));
    }
  }
  Result<FoundCheckpoint> found = find_checkpoint(o.checkpoint_dir);
  if (!found.is_ok()) {
    if (found.status().code() == StatusCode::kNotFound) return;
    throw Error(found.status());
  }
  if (!o.resume) {
    throw Error(already_exists("checkpoint directory '" + o.checkpoint_dir +
                               "' already holds a checkpoint: resume it or use another one"));
  }
  resume(found.value());
}

void CheckpointKeeper::resume(const FoundCheckpoint& checkpoint) {
  const CheckpointState& state = checkpoint.state;
  const Dataset& train = *setup_.train_data;
  throw_if_error(check_same_run(checkpoint, run_identity()));
  const std::string changed = settings_difference(state.settings, run_settings());
  if (!changed.empty() && !setup_.options.override_settings) {
    throw Error(invalid_argument(
        fmt::format("checkpoint {} was written with other settings: {}; resume with the same "
                    "options, or add --override to go on with this run's",
                    checkpoint.path, changed)));
  }
  const uint64_t samples = train.size() * static_cast<uint64_t>(setup_.train_per_record);
  if (static_cast<uint64_t>(state.loader.position) > samples) {
    throw Error(
        corrupt(fmt::format("checkpoint {}: loader position {} is beyond the {} samples of "
                            "the training data",
                            checkpoint.path, state.loader.position, samples)));
  }
  check_step(checkpoint.path, state);
  throw_if_error(restore_checkpoint(checkpoint, *setup_.model, *setup_.optimizer));
  setup_.loader->restore(state.loader);
  throw_if_error(setup_.scaler.load_state(state.scaler));
  ResumePoint& point = resumed_.emplace();
  point.path = checkpoint.path;
  point.step = state.step;
  // The interrupted epoch's loss so far, counted once: by rank 0, summed over ranks later.
  point.epoch_loss_sum = setup_.leads() ? state.epoch_loss_sum : 0;
  point.epoch_samples = state.epoch_samples;
  if (!checkpoint.note.empty()) point.notes.push_back("note: " + checkpoint.note);
  if (!changed.empty()) point.notes.push_back("note: --override: going on with " + changed);
  const ScheduleSpec& schedule = setup_.schedule->spec();
  const bool length_shapes_lr =
      schedule.kind == ScheduleKind::kCosine || schedule.kind == ScheduleKind::kOneCycle;
  if (state.run_steps != 0 && state.run_steps != schedule.total_steps && length_shapes_lr) {
    point.notes.push_back(fmt::format(
        "note: the checkpoint's run was {} optimizer steps long and this one is {}: the lr "
        "schedule now follows this run's length, so it differs from the interrupted run's",
        state.run_steps, schedule.total_steps));
  }
}

void CheckpointKeeper::check_step(const std::string& path, const CheckpointState& state) const {
  // Optimizer steps happen every `accum` batches and at an epoch's end; a checkpoint is written
  // between steps, so its step follows from where the loader stands.
  const TrainerOptions& o = setup_.options;
  const int64_t global_batch = o.batch_size * setup_.world_size;
  const int64_t steps_per_epoch = setup_.steps_per_epoch();
  const int64_t batches = (state.loader.position + global_batch - 1) / global_batch;
  const int64_t expected =
      state.loader.epoch <= std::numeric_limits<int64_t>::max() / steps_per_epoch - 1
          ? state.loader.epoch * steps_per_epoch + batches / o.accum
          : -1;
  if (state.step == expected) return;
  throw Error(corrupt(fmt::format(
      "checkpoint {}: step {} does not match where its data stands (epoch {}, sample {} of it: "
      "step {} with batch {} and accum {}); its description was edited or damaged: resume from "
      "another checkpoint or start again",
      path, state.step, state.loader.epoch + 1, state.loader.position, expected, global_batch,
      o.accum)));
}

RunIdentity CheckpointKeeper::run_identity() const {
  const TrainerOptions& o = setup_.options;
  RunIdentity run;
  run.data = data_identity(setup_.train_data->manifest(), data_files_);
  run.data_files = data_files_;
  run.model = setup_.model->name();
  run.optimizer = o.optimizer.name;
  run.schedule = to_string(o.schedule.kind);
  run.batch_size = o.batch_size * setup_.world_size;
  run.accum = o.accum;
  run.seed = o.seed;
  run.shuffle_window = o.loader.shuffle_window;
  run.ra_reps = o.loader.ra_reps;
  run.mean = setup_.normalization.mean;
  run.std = setup_.normalization.std;
  return run;
}

RunSettings CheckpointKeeper::run_settings() const {
  const TrainerOptions& o = setup_.options;
  const auto text = [](auto value) { return fmt::format("{}", value); };
  const auto on_off = [](bool on) { return std::string(on ? "on" : "off"); };
  RunSettings settings = {{"--lr", text(o.optimizer.lr)},
                          {"--momentum", text(o.optimizer.momentum)},
                          {"--nesterov", on_off(o.optimizer.nesterov)},
                          {"--weight-decay", text(weight_decay_of(o.optimizer))},
                          {"--warmup", text(o.schedule.warmup_steps)},
                          {"--amp", to_string(o.amp)},
                          {"--clip-grad", text(o.clip_grad)},
                          {"--label-smoothing", text(o.label_smoothing)},
                          {"--mixup-alpha", text(o.mixup_alpha)},
                          {"--cutmix-alpha", text(o.cutmix_alpha)},
                          {"--random-erase", text(o.random_erase)}};
  if (o.schedule.kind == ScheduleKind::kStep) {
    settings["--step-size"] = text(o.schedule.step_size);
    settings["--gamma"] = text(o.schedule.gamma);
  } else if (o.schedule.kind != ScheduleKind::kConstant) {
    settings["--min-lr"] = text(o.schedule.min_lr);
  }
  const bool video = setup_.spec.frames > 0;
  const bool encoded = is_encoded_image_field(setup_.train_data->schema(), "image");
  if (video || encoded) {  // what crops and flips
    settings["--image-size"] = text(o.image_size);
    settings["--train-crop-size"] = text(o.train_crop_size);  // resolved (training_setup.h)
    settings["--val-crop-size"] = text(o.val_crop_size);
    settings["--val-resize-size"] = text(o.val_resize_size);
    settings["--flip"] = text(o.augment.flip_probability);
  }
  if (video) {
    settings["--frames"] = text(o.frames);
    settings["--frame-step"] = text(o.frame_step);
    settings["--clips-per-video"] = text(o.clips_per_video);
    settings["--clips-together"] = on_off(o.clips_together);  // shapes the order
  }
  if (encoded) {
    const RandomCropOptions& a = o.augment;
    settings["--crop-scale"] = text(a.crop.scale_min);
    settings["--crop-ratio-min"] = text(a.crop.ratio_min);
    settings["--crop-ratio-max"] = text(a.crop.ratio_max);
    settings["--dct-scaling"] = on_off(o.dct_scaling);
    settings["--interpolation"] = o.interpolation;  // a checkpoint from before it has none
  }
  settings["--augment"] =
      o.augment_ops.empty() ? "none" : fmt::format("{}", fmt::join(o.augment_ops, " "));
  return settings;
}

std::string CheckpointKeeper::save(int64_t step, double epoch_loss_sum, int64_t epoch_samples) {
  const TrainerOptions& o = setup_.options;
  if (o.checkpoint_dir.empty()) return "";
  TraceSpan span(o.tracer, "train", "checkpoint");
  CheckpointState state;
  state.run = run_identity();
  state.step = step;
  state.loader = setup_.loader->state();
  state.scaler = setup_.scaler.state();
  state.epoch_loss_sum = epoch_loss_sum;
  state.epoch_samples = epoch_samples;
  state.run_steps = setup_.schedule->spec().total_steps;
  state.settings = run_settings();
  std::string written;
  if (setup_.leads()) {
    throw_if_error(save_checkpoint(o.checkpoint_dir, state, *setup_.model, *setup_.optimizer));
    written = latest_checkpoint(o.checkpoint_dir).value_or_throw();
  }
  // The other ranks go on (or end) once the checkpoint is written: a failed write fails them too.
  if (o.process_group) throw_if_error(o.process_group->barrier());
  return written;
}

}  // namespace stoker
