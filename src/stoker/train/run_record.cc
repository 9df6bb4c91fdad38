#include "stoker/train/run_record.h"

#include <torch/version.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "stoker/distributed/process_group.h"
#include "stoker/train/checkpoint.h"
#include "stoker/train/slow_configs.h"
#include "stoker/util/machine.h"

namespace stoker {

std::string run_record(const TrainingSetup& setup, int64_t step, const std::string& resumed_from,
                       const std::vector<FileBlock>& data_files) {
  const TrainerOptions& o = setup.options;
  const ScheduleSpec& schedule = setup.schedule->spec();
  const NormalizationChoice& normalization = setup.normalization;
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  auto optional = [](const std::string& s) {
    return s.empty() ? nlohmann::json() : nlohmann::json(s);
  };
  nlohmann::json record = {
      {"versions",
       {{"stoker", STOKER_VERSION},
        {"libtorch", TORCH_VERSION},
        {"dataset_format", kDatasetFormatVersion},
        {"checkpoint_format", kCheckpointFormatVersion}}},
      {"config",
       {{"model", setup.model->name()},
        {"epochs", o.epochs},
        {"batch_size", o.batch_size},
        {"optimizer",
         {{"name", o.optimizer.name},
          {"lr", o.optimizer.lr},
          {"momentum", o.optimizer.momentum},
          {"dampening", o.optimizer.dampening},
          {"nesterov", o.optimizer.nesterov},
          {"beta1", o.optimizer.beta1},
          {"beta2", o.optimizer.beta2},
          {"eps", o.optimizer.eps},
          {"weight_decay", o.optimizer.weight_decay ? nlohmann::json(*o.optimizer.weight_decay)
                                                    : nlohmann::json("default")}}},
        {"schedule",
         {{"kind", to_string(schedule.kind)},
          {"lr", schedule.lr},
          {"warmup_steps", schedule.warmup_steps},
          {"total_steps", schedule.total_steps},
          {"step_size", schedule.step_size},
          {"gamma", schedule.gamma},
          {"min_lr", schedule.min_lr}}},
        {"amp", to_string(o.amp)},
        {"accum", o.accum},
        {"world_size", setup.world_size},
        {"dist_backend",
         o.process_group ? kDistBackendNames.name(o.process_group->backend()) : "none"},
        {"clip_grad", o.clip_grad},
        {"label_smoothing", o.label_smoothing},
        {"mixup_alpha", o.mixup_alpha},
        {"cutmix_alpha", o.cutmix_alpha},
        {"random_erase", o.random_erase},
        {"train_crop_size", o.train_crop_size},
        {"val_resize_size", o.val_resize_size},
        {"val_crop_size", o.val_crop_size},
        {"threads", setup.threads},
        {"workers", setup.workers.is_tuned() ? nlohmann::json("auto")
                                             : nlohmann::json(setup.workers.threads())},
        {"sample_cost_us", o.sample_cost.count()},
        {"device", setup.device.str()},
        {"verify", to_string(o.loader.verify)},
        {"seed", o.seed},
        {"shuffle_window", shuffle_window_text(o.loader.shuffle_window)},
        {"ra_reps", o.loader.ra_reps},
        {"mean", normalization.mean},
        {"std", normalization.std},
        {"mean_from", to_string(normalization.mean_from)},
        {"std_from", to_string(normalization.std_from)},
        {"eval", o.eval},
        {"max_steps", o.max_steps},
        {"checkpoint_dir", optional(o.checkpoint_dir)},
        {"resumed_from", optional(resumed_from)},
        {"save_model", optional(o.save_model)},
        {"log_every", o.log_every}}},
      {"data",
       {{"train", setup.train_data->dir()},
        {"train_records", setup.train_data->size()},
        {"identity", data_identity(setup.train_data->manifest(), data_files)},
        {"eval", setup.test_data ? nlohmann::json(setup.test_data->dir()) : nlohmann::json()},
        {"input", sample_shape(setup.spec)},
        {"classes", setup.spec.num_classes}}},
      {"machine",
       {{"hostname", host},
        {"cores", machine_cores()},
        {"memory_bytes", machine_memory_bytes()},
        {"cpu_flags", machine_cpu_flags()},
        {"libtorch_cpu_capability", libtorch_cpu_capability()}}},
      {"step", step}};
  if (!o.augment_ops.empty()) record["config"]["augment"] = o.augment_ops;
  return record.dump();
}

}  // namespace stoker
