#include "stoker/train/trainer.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "stoker/pipeline/sample_cost.h"
#include "stoker/store/data_location.h"
#include "stoker/store/dataset_summary.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/train/default_generator.h"
#include "stoker/train/slow_configs.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/machine.h"
#include "stoker/util/output_rescue.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Evaluation runs in larger batches than training: faster, and its results do not depend on the
// batch size (up to float rounding).
constexpr int64_t kEvalBatchSize = 256;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(invalid_argument(message));
}

// The data to use: options' (a dataset, or a folder with train/ and test/ or val/) or the
// default Fashion-MNIST folder, which must have been converted already (the library writes no
// data of its own accord).
DataLocation resolve_data(const std::string& data_dir) {
  const std::string dir = data_dir.empty() ? default_fashion_mnist_dir() : data_dir;
  if (data_dir.empty() && !fashion_mnist_converted(dir)) {
    throw Error(not_found(fmt::format(
        "the default data {} is not converted: convert it first (`stoker convert fashion-mnist`; "
        "`stoker train` does it on first use), or give a data directory",
        dir)));
  }
  DataLocation where = locate_data(dir).value_or_throw();
  if (where.train.empty()) {
    throw Error(not_found(fmt::format(
        "{} holds no train/ dataset (it holds {}): give one dataset, or a folder with train/ and "
        "test/ (or val/)",
        dir, describe_splits(where))));
  }
  return where;
}

// Index of field `name` with dtype `dtype`, or an Error naming the dataset.
int require_field(const Dataset& data, const std::string& name, DType dtype) {
  const int f = data.schema().find(name);
  if (f < 0 || data.schema().fields()[f].dtype != dtype) {
    throw Error(invalid_argument(fmt::format("{}: the trainer needs a field '{}' of type {}",
                                             data.dir(), name, dtype_name(dtype))));
  }
  return f;
}

// The model's input shape: the image field's (uint8 [C,H,W], or [H,W] as one channel), or
// RGB at image_size for encoded images.
ModelSpec input_spec(const Dataset& data, int image_size) {
  const Field& label = data.schema().fields()[require_field(data, "label", DType::kInt64)];
  require(label.shape.empty(), data.dir() + ": field 'label' must be a scalar");
  ModelSpec spec;
  if (is_encoded_image_field(data.schema(), "image")) {
    spec.channels = 3;
    spec.height = spec.width = image_size;
    return spec;
  }
  const Field& image = data.schema().fields()[require_field(data, "image", DType::kUint8)];
  require(image.shape.size() == 2 || image.shape.size() == 3,
          data.dir() + ": field 'image' must have shape [C,H,W] or [H,W]");
  const bool has_channels = image.shape.size() == 3;
  spec.channels = has_channels ? image.shape[0] : 1;
  spec.height = image.shape[has_channels ? 1 : 0];
  spec.width = image.shape[has_channels ? 2 : 1];
  return spec;
}

// Every label must be a class of the model; the error names the first record that is not.
void check_labels(const Dataset& data, int64_t num_classes) {
  const int field = data.schema().find("label");
  for (uint64_t i = 0; i < data.size(); ++i) {
    int64_t label;
    std::memcpy(&label, data.fixed_field(i, field), sizeof(label));
    if (label < 0 || label >= num_classes) {
      throw Error(invalid_argument(
          fmt::format("{}: record {} has label {}, outside the model's {} classes [0, {})",
                      data.dir(), i, label, num_classes, num_classes)));
    }
  }
}

// Refuses evaluation data whose classes are named differently from the training data's: label
// i would mean one class in training and another in the test, and the accuracy nothing.
void check_same_classes(const Dataset& train, const Dataset& test) {
  const std::vector<std::string>& a = train.manifest().class_names;
  const std::vector<std::string>& b = test.manifest().class_names;
  if (a.empty() || b.empty() || a == b) return;
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const auto name = [](const std::vector<std::string>& names, size_t i) {
    return i < names.size() ? "'" + names[i] + "'" : std::string("none");
  };
  throw Error(invalid_argument(fmt::format(
      "{} and {} name their classes differently (label {}: {} in training, {} in the test; {} "
      "and {} classes): convert both splits from the same class folders",
      train.dir(), test.dir(), i, name(a, i), name(b, i), a.size(), b.size())));
}

// Refuses a batch size whose buffers cannot fit in the machine's memory, before anything is
// allocated: each sample of the largest batch needs its float model input and its uint8 images
// in the loader's buffers (at least kMinLoaderBuffers of them: auto prefetch 4, plus 2).
void check_batch_fits(const ModelSpec& spec, int64_t batch) {
  constexpr double kMinLoaderBuffers = 6;
  const double pixels = static_cast<double>(spec.channels) * spec.height * spec.width;
  const double per_sample = pixels * sizeof(float) + kMinLoaderBuffers * (pixels + sizeof(int64_t));
  const double memory = static_cast<double>(machine_memory_bytes());
  if (memory == 0 || per_sample * static_cast<double>(batch) <= memory) return;
  throw Error(invalid_argument(fmt::format(
      "batch size {} needs at least {} for samples of [{}, {}, {}] (float model input and the "
      "loader's buffers), more than this machine's memory ({}): at most {} samples fit",
      batch, human_bytes(per_sample * static_cast<double>(batch)), spec.channels, spec.height,
      spec.width, human_bytes(memory), static_cast<int64_t>(memory / per_sample))));
}

// The image field as the model takes it before normalisation: uint8 as stored, or for encoded
// images torchvision's training (`train`) or evaluation transform at image_size, as uint8.
FieldRequest image_request(const Dataset& data, const TrainerOptions& o, bool train) {
  if (!is_encoded_image_field(data.schema(), "image")) return FieldRequest("image");
  ImageOutput output;
  output.size = o.image_size;
  output.uint8 = true;
  output.dct_scaling = o.dct_scaling;
  return FieldRequest(
      "image", (train ? random_resized_crop_transform(data.schema(), "image", output, o.augment)
                      : center_crop_transform(data.schema(), "image", output))
                   .value_or_throw());
}

// The device `name` names ("" = CUDA if available, else the CPU); an Error if this build or
// machine does not have it.
c10::Device resolve_device(const std::string& name) {
  if (name.empty()) return torch::cuda::is_available() ? c10::kCUDA : c10::kCPU;
  const bool cuda = name == "cuda" || name.rfind("cuda:", 0) == 0;
  if (name != "cpu" && !cuda) {
    throw Error(invalid_argument("unknown device '" + name + "': cpu, cuda or cuda:N"));
  }
  if (cuda && !torch::cuda::is_available()) {
    throw Error(invalid_argument("device " + name +
                                 ": no CUDA device (this LibTorch is built without CUDA, or none "
                                 "is visible); use --device cpu"));
  }
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(name);
  } catch (const c10::Error&) {
    throw Error(invalid_argument("unknown device '" + name + "': cpu, cuda or cuda:N"));
  }
  if (device.is_cuda() && device.has_index() &&
      device.index() >= static_cast<int>(torch::cuda::device_count())) {
    throw Error(invalid_argument(fmt::format("device {}: this machine has {} CUDA device(s)", name,
                                             torch::cuda::device_count())));
  }
  return device;
}

// Refuses a model whose parameters, their gradients and the optimizer's state (Adam's two
// moments, SGD's momentum) cannot fit in the machine's memory, before they are allocated.
void check_model_fits(const std::string& model, const ModelSpec& spec, double parameters,
                      const OptimizerSpec& optimizer) {
  const double states = optimizer.name == "sgd" ? (optimizer.momentum > 0 ? 1 : 0) : 2;
  const double bytes = parameters * sizeof(float) * (2 + states);
  const double memory = static_cast<double>(machine_memory_bytes());
  if (memory == 0 || bytes <= memory) return;
  throw Error(invalid_argument(fmt::format(
      "model {} for samples of [{}, {}, {}] and {} classes has {:.0f} parameters: with their "
      "gradients and {}'s state that is {}, more than this machine's memory ({})",
      model, spec.channels, spec.height, spec.width, spec.num_classes, parameters, optimizer.name,
      human_bytes(bytes), human_bytes(memory))));
}

std::unique_ptr<Loader> make_loader(std::shared_ptr<const Dataset> data, const TrainerOptions& o,
                                    int64_t batch_size, bool train, const c10::Device& device) {
  LoaderOptions lo;
  lo.batch_size = batch_size;
  if (o.process_group) {  // this rank's shard
    lo.rank = o.process_group->rank();
    lo.world_size = o.process_group->world_size();
  }
  lo.workers = o.workers;
  lo.tune.start_workers = 1;  // the trainer's default: tuning is never behind it
  lo.verify = o.verify;
  lo.seed = o.seed;
  lo.shuffle = train;
  lo.tracer = o.tracer;
  // Images as uint8: InputNormalizer turns them into float where the model runs.
  lo.fields = {image_request(*data, o, train), FieldRequest("label")};
  if (train && o.sample_cost.count() > 0)
    lo.fields.emplace_back(kSampleCostField, busy_wait_transform(o.sample_cost));
  return std::make_unique<Loader>(std::move(data), lo, device);
}

}  // namespace

Trainer::Trainer(TrainerOptions options)
    : options_(std::move(options)),
      rank_(options_.process_group ? options_.process_group->rank() : 0),
      world_size_(options_.process_group ? options_.process_group->world_size() : 1),
      device_(resolve_device(options_.device)),
      scaler_(options_.amp),
      progress_(rank_ == 0 ? options_.out : nullptr,
                options_.progress.value_or(default_progress_style(options_.out))) {
  const TrainerOptions& o = options_;
  require(o.epochs >= 1, "epochs must be >= 1");
  require(o.batch_size >= 1, "batch size must be >= 1");
  require(o.accum >= 1, "accum must be >= 1");
  require(o.clip_grad >= 0 && std::isfinite(o.clip_grad), "clip-grad must be >= 0 (0 = off)");
  require(o.workers >= 0 || o.workers == kAutoTuneWorkers,
          "workers must be >= 0, or kAutoTuneWorkers");
  require(o.max_steps >= 0, "max steps must be >= 0 (0 = no limit)");
  require(o.sample_cost.count() >= 0, "sample cost must be >= 0 (0 = none)");
  require(!o.resume || !o.checkpoint_dir.empty(), "resume needs a checkpoint directory");
  { AutocastGuard probe(o.amp, device_.type()); }  // rejects a mode this device lacks, early
  threads_ = at::get_num_threads();
  warnings_ = slow_configuration_warnings(
      o.amp, device_.is_cpu(), bf16_not_native(machine_cpu_flags(), libtorch_cpu_capability()),
      threads_, o.workers == kAutoTuneWorkers ? 1 : o.workers, machine_cores());

  const DataLocation data = resolve_data(o.data_dir);
  train_data_ = Dataset::open(data.train).value_or_throw();
  if (o.eval && data.eval.empty()) {
    options_.eval = false;
    eval_note_ = "not evaluating: " + data.path +
                 " is one dataset (a folder with train/ and test/ or val/ is evaluated on the "
                 "second)";
  }
  require(o.image_size >= 1, "image size must be >= 1");
  spec_ = input_spec(*train_data_, o.image_size);
  spec_.num_classes = count_classes(*train_data_).value_or_throw();
  check_labels(*train_data_, spec_.num_classes);
  check_batch_fits(spec_, o.eval ? std::max(o.batch_size, kEvalBatchSize) : o.batch_size);
  const uint64_t global_batch = static_cast<uint64_t>(o.batch_size) * world_size_;
  require(global_batch <= train_data_->size(),
          fmt::format("batch size {}{} is more than the {} samples of {}: every batch would be "
                      "all of them; use a batch size of at most {}",
                      o.batch_size, world_size_ > 1 ? fmt::format(" x {} ranks", world_size_) : "",
                      train_data_->size(), train_data_->dir(),
                      std::max<uint64_t>(1, train_data_->size() / world_size_)));
  if (o.eval) {
    test_data_ = Dataset::open(data.eval).value_or_throw();
    eval_note_ = fmt::format("evaluating on {} ({} samples) after each epoch", test_data_->dir(),
                             test_data_->size());
    require(test_data_->schema() == train_data_->schema(),
            test_data_->dir() + " has another schema than " + train_data_->dir());
    require(test_data_->size() > 0, test_data_->dir() + " holds no records");
    check_same_classes(*train_data_, *test_data_);
    check_labels(*test_data_, spec_.num_classes);
  }

  const double builtin_parameters = builtin_parameter_count(o.model, spec_);
  if (builtin_parameters >= 0) check_model_fits(o.model, spec_, builtin_parameters, o.optimizer);
  {
    const ScopedSeed seeded(o.seed);  // initialised from the seed; the caller's stream untouched
    model_ = make_model(o.model, spec_);
  }
  throw_if_error(check_output_shape(*model_, spec_, o.verbose));
  model_->to(device_);
  model_->train(true);
  params_ = model_->parameters();
  if (o.process_group) {
    // The same run on every rank, else their collectives would not match ...
    double parameters = 0;
    for (const auto& named : model_->named_state()) parameters += named.second.numel();
    check_ranks_agree({{"model parameters and buffers", parameters},
                       {"training samples", static_cast<double>(train_data_->size())},
                       {"batch size", static_cast<double>(o.batch_size)},
                       {"accum", static_cast<double>(o.accum)},
                       {"epochs", static_cast<double>(o.epochs)},
                       {"max steps", static_cast<double>(o.max_steps)},
                       {"evaluation", o.eval ? 1.0 : 0.0}},
                      "every rank must be given the same data, model and options");
    // ... starting from rank 0's parameters and buffers.
    std::vector<at::Tensor> state;
    for (const auto& named : model_->named_state()) state.push_back(named.second);
    torch::NoGradGuard no_grad;
    throw_if_error(o.process_group->broadcast(state, 0));
  }
  double parameters = 0;
  for (const at::Tensor& p : params_) parameters += static_cast<double>(p.numel());
  check_model_fits(model_->name(), spec_, parameters, o.optimizer);  // a TorchScript model's
  require(std::any_of(params_.begin(), params_.end(),
                      [](const at::Tensor& p) { return p.requires_grad(); }),
          "model " + model_->name() + " has no trainable parameters: nothing to train");
  optimizer_ = make_optimizer(o.optimizer, params_);
  if (o.process_group) reducer_ = std::make_unique<GradientReducer>(*o.process_group, params_);

  const int64_t largest_batch = o.eval ? std::max(o.batch_size, kEvalBatchSize) : o.batch_size;
  const bool encoded = is_encoded_image_field(train_data_->schema(), "image");
  const Schema& schema = train_data_->schema();
  // The training data's own statistics (unless given), for training and evaluation alike.
  normalization_ =
      choose_normalization(train_data_->manifest(), train_data_->dir(), encoded, o.mean, o.std);
  if (!normalization_.warning.empty()) warnings_.push_back(normalization_.warning);
  normalize_ = std::make_unique<InputNormalizer>(
      encoded ? std::vector<int64_t>{spec_.channels, spec_.height, spec_.width}
              : schema.fields()[schema.find("image")].shape,
      normalization_.mean, normalization_.std, largest_batch, device_);
  loader_ = make_loader(train_data_, o, o.batch_size, /*train=*/true, device_);
  if (o.eval) test_loader_ = make_loader(test_data_, o, kEvalBatchSize, /*train=*/false, device_);
  ScheduleSpec schedule = o.schedule;
  schedule.lr = o.optimizer.lr;
  const int64_t steps_per_epoch = (loader_->batches_per_epoch() + o.accum - 1) / o.accum;
  require(o.epochs <= std::numeric_limits<int64_t>::max() / steps_per_epoch,
          fmt::format("{} epochs of {} optimizer steps are more steps than a run can count",
                      o.epochs, steps_per_epoch));
  schedule.total_steps = o.epochs * steps_per_epoch;
  schedule_ = std::make_unique<LrSchedule>(schedule);
  lr_ = schedule_->lr_at(0);

  if (!o.checkpoint_dir.empty()) open_checkpoint_dir(schedule);
  // The same starting point on every rank; also the barrier after which rank 0 may replace the
  // checkpoint every rank has read.
  if (o.process_group) {
    const LoaderState start = loader_->state();
    check_ranks_agree({{"step", static_cast<double>(step_)},
                       {"epoch", static_cast<double>(start.epoch)},
                       {"position", static_cast<double>(start.position)}},
                      "every rank must resume from the same checkpoint, so --checkpoint-dir must "
                      "be a directory they all share");
  }
  if (!o.save_model.empty() && leads()) throw_if_error(check_output_path(o.save_model));
  if (!o.log_path.empty() && leads()) {
    if (!resumed_from_.empty()) throw_if_error(RunLog::trim_for_resume(o.log_path, step_));
    log_.emplace(RunLog::open(o.log_path).value_or_throw());
  }
}

Trainer::~Trainer() = default;

void Trainer::open_checkpoint_dir(const ScheduleSpec& schedule) {
  const TrainerOptions& o = options_;
  if (leads()) {  // the other ranks only read
    throw_if_error(prepare_checkpoint_dir(o.checkpoint_dir));
    checkpoint_lock_.emplace(lock_checkpoint_dir(o.checkpoint_dir).value_or_throw());
    if (const int removed = remove_partial_checkpoints(o.checkpoint_dir); removed > 0) {
      warnings_.push_back(
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
  const FoundCheckpoint& checkpoint = found.value();
  const CheckpointState& state = checkpoint.state;
  throw_if_error(check_same_run(checkpoint, run_identity()));
  if (static_cast<uint64_t>(state.loader.position) > train_data_->size()) {
    throw Error(
        corrupt(fmt::format("checkpoint {}: loader position {} is beyond the {} samples of "
                            "the training data",
                            checkpoint.path, state.loader.position, train_data_->size())));
  }
  check_checkpoint_step(checkpoint.path, state);
  throw_if_error(restore_checkpoint(checkpoint.path, *model_, *optimizer_));
  loader_->restore(state.loader);
  throw_if_error(scaler_.load_state(state.scaler));
  step_ = state.step;
  // The interrupted epoch's loss so far, counted once: by rank 0, summed over ranks later.
  resumed_loss_sum_ = leads() ? state.epoch_loss_sum : 0;
  resumed_samples_ = state.epoch_samples;
  resumed_from_ = checkpoint.path;
  if (!checkpoint.note.empty()) resume_notes_.push_back("note: " + checkpoint.note);
  const bool length_shapes_lr =
      schedule.kind == ScheduleKind::kCosine || schedule.kind == ScheduleKind::kOneCycle;
  if (state.run_steps != 0 && state.run_steps != schedule.total_steps && length_shapes_lr) {
    resume_notes_.push_back(fmt::format(
        "note: the checkpoint's run was {} optimizer steps long and this one is {}: the lr "
        "schedule now follows this run's length, so it differs from the interrupted run's",
        state.run_steps, schedule.total_steps));
  }
}

void Trainer::check_checkpoint_step(const std::string& path, const CheckpointState& state) const {
  // Optimizer steps happen every `accum` batches and at an epoch's end; a checkpoint is written
  // between steps, so its step follows from where the loader stands.
  const int64_t global_batch = options_.batch_size * world_size_;
  const int64_t steps_per_epoch =
      (loader_->batches_per_epoch() + options_.accum - 1) / options_.accum;
  const int64_t batches = (state.loader.position + global_batch - 1) / global_batch;
  const int64_t expected =
      state.loader.epoch <= std::numeric_limits<int64_t>::max() / steps_per_epoch - 1
          ? state.loader.epoch * steps_per_epoch + batches / options_.accum
          : -1;
  if (state.step == expected) return;
  throw Error(corrupt(fmt::format(
      "checkpoint {}: step {} does not match where its data stands (epoch {}, sample {} of it: "
      "step {} with batch {} and accum {}); its description was edited or damaged: resume from "
      "another checkpoint or start again",
      path, state.step, state.loader.epoch + 1, state.loader.position, expected, global_batch,
      options_.accum)));
}

std::string Trainer::run_record() const {
  const TrainerOptions& o = options_;
  const ScheduleSpec& schedule = schedule_->spec();
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  auto optional = [](const std::string& s) {
    return s.empty() ? nlohmann::json() : nlohmann::json(s);
  };
  const nlohmann::json record = {
      {"versions",
       {{"stoker", STOKER_VERSION},
        {"libtorch", TORCH_VERSION},
        {"dataset_format", kDatasetFormatVersion},
        {"checkpoint_format", kCheckpointFormatVersion}}},
      {"config",
       {{"model", model_->name()},
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
        {"world_size", world_size_},
        {"dist_backend",
         o.process_group ? kDistBackendNames.name(o.process_group->backend()) : "none"},
        {"clip_grad", o.clip_grad},
        {"threads", threads_},
        {"workers",
         o.workers == kAutoTuneWorkers ? nlohmann::json("auto") : nlohmann::json(o.workers)},
        {"sample_cost_us", o.sample_cost.count()},
        {"device", device_.str()},
        {"verify", to_string(o.verify)},
        {"seed", o.seed},
        {"mean", normalization_.mean},
        {"std", normalization_.std},
        {"mean_from", to_string(normalization_.mean_from)},
        {"std_from", to_string(normalization_.std_from)},
        {"eval", o.eval},
        {"max_steps", o.max_steps},
        {"checkpoint_dir", optional(o.checkpoint_dir)},
        {"resumed_from", optional(resumed_from_)},
        {"save_model", optional(o.save_model)},
        {"log_every", o.log_every}}},
      {"data",
       {{"train", train_data_->dir()},
        {"train_records", train_data_->size()},
        {"identity", data_identity(train_data_->manifest())},
        {"eval", test_data_ ? nlohmann::json(test_data_->dir()) : nlohmann::json()},
        {"input", {spec_.channels, spec_.height, spec_.width}},
        {"classes", spec_.num_classes}}},
      {"machine",
       {{"hostname", host},
        {"cores", machine_cores()},
        {"memory_bytes", machine_memory_bytes()},
        {"cpu_flags", machine_cpu_flags()},
        {"libtorch_cpu_capability", libtorch_cpu_capability()}}},
      {"step", step_}};
  return record.dump();
}

RunIdentity Trainer::run_identity() const {
  RunIdentity run;
  run.data = data_identity(train_data_->manifest());
  run.model = model_->name();
  run.optimizer = options_.optimizer.name;
  run.schedule = to_string(options_.schedule.kind);
  run.batch_size = options_.batch_size * world_size_;
  run.accum = options_.accum;
  run.seed = options_.seed;
  run.mean = normalization_.mean;
  run.std = normalization_.std;
  return run;
}

int64_t Trainer::batches_per_epoch() const { return loader_->batches_per_epoch(); }

TrainResult Trainer::run() {
  const Clock::time_point start = Clock::now();
  const TrainerOptions& o = options_;
  TrainResult result;
  result.steps = step_;
  if (!resumed_from_.empty()) {
    progress_.print(fmt::format("resuming from {}: epoch {}, step {}", resumed_from_,
                                loader_->state().epoch + 1, step_));
    for (const std::string& note : resume_notes_) progress_.print(note);
  }
  for (const std::string& warning : warnings_) progress_.print(warning);
  if (log_) throw_if_error(log_->append("run", run_record()));
  progress_.print(
      fmt::format("training {} on {} ({} samples, {} classes; {}) for {} epochs: batch {}, {} lr "
                  "{:g}, amp {}, {} threads, {} workers, device {}",
                  model_->name(), train_data_->dir(), train_data_->size(), spec_.num_classes,
                  normalization_.phrase, o.epochs, o.batch_size, o.optimizer.name, o.optimizer.lr,
                  to_string(o.amp), threads_,
                  o.workers == kAutoTuneWorkers ? "auto" : std::to_string(o.workers),
                  device_.str()) +
      (o.process_group ? fmt::format(", {} ranks over {}", world_size_,
                                     kDistBackendNames.name(o.process_group->backend()))
                       : "") +
      (o.sample_cost.count() > 0
           ? fmt::format(", a synthetic cost of {} us per sample", o.sample_cost.count())
           : ""));
  if (!eval_note_.empty()) progress_.print(eval_note_);

  result.epoch = std::min(loader_->state().epoch, o.epochs);
  if (loader_->state().epoch >= o.epochs) {
    progress_.print(fmt::format("the checkpoint is past epoch {}: nothing to train", o.epochs));
  }
  for (int64_t e = loader_->state().epoch; e < o.epochs; ++e) {
    result.epoch = e + 1;
    EpochMetrics metrics;
    if (!train_epoch(e, metrics, result)) break;
    result.epochs.push_back(metrics);
    if (result.reason != StopReason::kCompleted) break;
  }
  result.steps = step_;
  result.seconds = seconds_since(start);
  result.tuning = loader_->tuning();
  say_tuning(/*at_end=*/true);

  if (result.reason != StopReason::kStopRequested && !o.save_model.empty() && leads()) {
    result.model_error = write_or_rescue(
        "the trained model", o.save_model,
        [&](const std::string& path) {
          return model_->save(path, {normalization_.mean, normalization_.std});
        },
        &result.model);
  }
  std::string summary = fmt::format("{} {}: {} epoch{}, {} steps in {:.1f} s",
                                    result.reason == StopReason::kCompleted ? "trained" : "stopped",
                                    model_->name(), result.epochs.size(),
                                    result.epochs.size() == 1 ? "" : "s", step_, result.seconds);
  if (!result.epochs.empty() && result.epochs.back().test_accuracy) {
    summary += fmt::format("; test acc {:.4f}, test loss {:.4f}",
                           *result.epochs.back().test_accuracy, *result.epochs.back().test_loss);
  }
  if (!result.checkpoint.empty()) summary += "; checkpoint " + result.checkpoint;
  if (!result.model.empty()) summary += "; model saved to " + result.model;
  progress_.print(summary);
  checkpoint_lock_.reset();  // nothing more is written
  return result;
}

bool Trainer::train_epoch(int64_t e, EpochMetrics& m, TrainResult& result) {
  const TrainerOptions& o = options_;
  // This rank's training loss summed over its samples (rank 0's includes the part of the epoch
  // before the checkpoint this run resumed from), and their count.
  double loss_sum = resumed_loss_sum_;
  int64_t loss_samples = leads() ? resumed_samples_ : 0;
  // An epoch resumed mid-way reports all its samples; its rate counts only this run's.
  m.samples = resumed_samples_;
  m.resumed_samples = resumed_samples_;
  resumed_loss_sum_ = 0;
  resumed_samples_ = 0;
  const AllReduceStats reduced_before = reducer_ ? reducer_->stats() : AllReduceStats();
  EpochRange range = loader_->epoch(e);
  const int64_t batches_done = loader_->batches_per_epoch() - range.size();
  progress_.start_epoch(e + 1, o.epochs, range.size());

  if (o.on_batch) o.on_batch(batches_done);
  const Clock::time_point epoch_start = Clock::now();
  double data_seconds = 0;
  h2d_seconds_ = 0;
  int64_t batches = 0;
  int64_t pending = 0;  // backward passes since the last optimizer step
  Clock::time_point t = Clock::now();
  EpochRange::Iterator it = [&] {
    TraceSpan span(o.tracer, "train", "data");
    return range.begin();
  }();
  data_seconds += seconds_since(t);
  // The epoch's loss over every rank, measured like a whole one.
  auto measure_epoch = [&] {
    const std::vector<double> sums = sum_over_ranks({loss_sum, static_cast<double>(loss_samples)});
    measure(e, sums[0], static_cast<int64_t>(sums[1]), epoch_start, data_seconds, m);
    if (reducer_) {
      const AllReduceStats& now = reducer_->stats();
      m.allreduces = now.reductions - reduced_before.reductions;
      m.allreduce_seconds = now.reduce_seconds - reduced_before.reduce_seconds;
      m.allreduce_exposed_seconds = now.exposed_seconds - reduced_before.exposed_seconds;
    }
    return sums;
  };
  // kResidentBatch keeps `it` on the epoch's first batch: the count ends the epoch.
  while (it != range.end() && batches < range.size()) {
    const bool ends_step = pending + 1 == o.accum || batches + 1 == range.size();
    const double loss = forward_backward(*it, e, batches_done + batches + 1, ends_step);
    loss_sum += loss * it->size();
    loss_samples += it->size();
    m.samples += it->size() * world_size_;  // every rank's batch is as large (sampler.h)
    step_loss_sum_ += loss * it->size();
    step_loss_samples_ += it->size();
    if (++pending == o.accum) {
      optimizer_step();
      pending = 0;
      if (!o.log_path.empty() && o.log_every > 0 && step_ % o.log_every == 0) {
        const std::vector<double> step_loss =
            sum_over_ranks({step_loss_sum_, static_cast<double>(step_loss_samples_)});
        const nlohmann::json record = {{"epoch", e + 1},
                                       {"step", step_},
                                       {"lr", lr_},
                                       {"loss", step_loss[0] / step_loss[1]},
                                       {"samples", m.samples}};
        if (log_) throw_if_error(log_->append("step", record.dump()));
        step_loss_sum_ = 0;
        step_loss_samples_ = 0;
      }
    }
    progress_.update(++batches, loss_sum / loss_samples, m.samples);
    if (o.on_batch) o.on_batch(batches_done + batches);
    // Stop only between optimizer steps and inside the epoch: a stop after its last batch waits
    // for the epoch's end (evaluation, log, checkpoint).
    const StopReason reason = stop_reason();
    if (reason != StopReason::kCompleted && pending == 0 && loader_->state().epoch == e) {
      result.reason = reason;
      // The part of the epoch that ran, measured like a whole one.
      const std::vector<double> sums = measure_epoch();
      progress_.print(fmt::format("{}  (stopped after {} of {} batches)", m.to_line(),
                                  batches_done + batches, loader_->batches_per_epoch()));
      checkpoint(sums[0], static_cast<int64_t>(sums[1]), result);
      return false;
    }
    if (o.step_mode == StepMode::kResidentBatch) continue;
    t = Clock::now();
    {
      TraceSpan span(o.tracer, "train", "data");
      ++it;
    }
    data_seconds += seconds_since(t);
  }
  if (pending > 0) optimizer_step();

  measure_epoch();
  if (o.eval) evaluate(e, m);
  progress_.print(m.to_line());
  say_tuning(/*at_end=*/false);
  if (log_) throw_if_error(log_->append("epoch", m.to_json()));
  checkpoint(0, 0, result);
  if (e + 1 < o.epochs) result.reason = stop_reason();  // after the last epoch: completed
  return true;
}

void Trainer::say_tuning(bool at_end) {
  const std::optional<TuningReport> tuning = loader_->tuning();
  if (!tuning || tuning_said_ || (!tuning->settled && !at_end)) return;
  progress_.print("workers auto: " + tuning->summary());
  tuning_said_ = true;
}

void Trainer::measure(int64_t e, double loss_sum, int64_t loss_samples,
                      Clock::time_point epoch_start, double data_seconds, EpochMetrics& m) const {
  m.epoch = e + 1;
  m.epochs = options_.epochs;
  m.steps = step_;
  m.lr = lr_;
  m.train_loss = loss_samples > 0 ? loss_sum / loss_samples : 0.0;
  m.seconds = seconds_since(epoch_start);
  m.data_seconds = data_seconds;
  m.h2d_seconds = h2d_seconds_;
  m.compute_seconds = std::max(0.0, m.seconds - m.data_seconds - m.h2d_seconds);
}

std::pair<at::Tensor, at::Tensor> Trainer::on_device(const Batch& batch) {
  TraceSpan span(options_.tracer, "train", "h2d");
  return {(*normalize_)(batch["image"]).view({-1, spec_.channels, spec_.height, spec_.width}),
          batch["label"].to(device_, /*non_blocking=*/true)};
}

double Trainer::forward_backward(const Batch& batch, int64_t e, int64_t batch_number,
                                 bool ends_step) {
  const Clock::time_point t = Clock::now();
  const auto [input, target] = on_device(batch);
  h2d_seconds_ += seconds_since(t);
  if (options_.step_mode == StepMode::kDataOnly) return 0.0;
  at::Tensor loss;
  {
    TraceSpan span(options_.tracer, "train", "forward");
    AutocastGuard autocast(options_.amp, device_.type());
    loss = torch::cross_entropy_loss(logits(input, e, batch_number).to(torch::kFloat32), target);
  }
  const double value = loss.item<double>();
  if (!std::isfinite(value) && !scaler_.enabled()) {
    throw Error(invalid_argument(fmt::format(
        "training stopped: loss is {} at epoch {}, batch {}, step {}; lower the learning rate "
        "or clip gradients (--clip-grad)",
        std::isnan(value) ? "NaN" : fmt::format("{}", value), e + 1, batch_number, step_ + 1)));
  }
  // The step's last backward starts averaging the gradients as they come, and carries this
  // rank's stop request to the others.
  if (reducer_) reducer_->prepare(ends_step, options_.stop && options_.stop->load() ? 1 : 0);
  try {
    TraceSpan span(options_.tracer, "train", "backward");
    scaler_.scale(options_.accum > 1 ? loss / static_cast<double>(options_.accum) : loss)
        .backward();
  } catch (const std::exception& error) {
    throw Error(invalid_argument(fmt::format("{}: the backward pass of model {} failed: {}",
                                             where(e, batch_number), model_->name(),
                                             exception_reason(error, options_.verbose))));
  }
  return value;
}

at::Tensor Trainer::logits(const at::Tensor& input, int64_t e, int64_t batch_number) {
  Result<at::Tensor> out = run_model(*model_, input, spec_.num_classes, options_.verbose);
  if (!out.is_ok())
    throw Error(invalid_argument(where(e, batch_number) + ": " + out.status().message()));
  return std::move(out).value();
}

std::string Trainer::where(int64_t e, int64_t batch_number) const {
  if (batch_number == 0) return fmt::format("evaluation after epoch {} stopped", e + 1);
  return fmt::format("training stopped at epoch {}, batch {}, step {}", e + 1, batch_number,
                     step_ + 1);
}

void Trainer::optimizer_step() {
  // Averaged gradients are the same on every rank: so is found-inf, and every rank skips the
  // same steps.
  if (options_.step_mode == StepMode::kDataOnly) {  // nothing to update; the step still counts
    ++step_;
    return;
  }
  TraceSpan span(options_.tracer, "train", "optimizer");
  if (reducer_) {
    TraceSpan wait(options_.tracer, "train", "allreduce_wait");
    throw_if_error(reducer_->synchronize());
  }
  const bool finite = scaler_.unscale_and_check(params_);
  if (finite) {
    if (options_.clip_grad > 0) torch::nn::utils::clip_grad_norm_(params_, options_.clip_grad);
    lr_ = schedule_->lr_at(step_);
    set_lr(*optimizer_, lr_);
    optimizer_->step();
  }
  scaler_.update(!finite);
  optimizer_->zero_grad();
  ++step_;
}

void Trainer::evaluate(int64_t e, EpochMetrics& m) {
  TraceSpan span(options_.tracer, "train", "eval");
  const Clock::time_point start = Clock::now();
  torch::NoGradGuard no_grad;
  model_->train(false);
  double loss_sum = 0;
  int64_t correct = 0;
  int64_t samples = 0;
  // This rank's shard without the padding that evens the shards out: each sample counts once.
  const int64_t own =
      unpadded_samples(static_cast<int64_t>(test_data_->size()), 0, rank_, world_size_);
  for (Batch& batch : test_loader_->epoch(e)) {
    const int64_t n = std::min<int64_t>(batch.size(), own - samples);
    if (n <= 0) continue;
    auto [input, target] = on_device(batch);
    if (n < batch.size()) {
      input = input.narrow(0, 0, n);
      target = target.narrow(0, 0, n);
    }
    at::Tensor scores;
    {
      AutocastGuard autocast(options_.amp, device_.type());
      scores = logits(input, e, 0).to(torch::kFloat32);
    }
    loss_sum += torch::cross_entropy_loss(scores, target, {}, at::Reduction::Sum).item<double>();
    correct += scores.argmax(1).eq(target).sum().item<int64_t>();
    samples += n;
  }
  model_->train(true);
  const std::vector<double> sums =
      sum_over_ranks({loss_sum, static_cast<double>(correct), static_cast<double>(samples)});
  m.test_loss = sums[0] / sums[2];
  m.test_accuracy = sums[1] / sums[2];
  m.eval_seconds = seconds_since(start);
}

StopReason Trainer::stop_reason() const {
  // Distributed: the requests voted with the last step's gradients, the same on every rank.
  const bool stop = reducer_ ? reducer_->votes() > 0 : options_.stop && options_.stop->load();
  if (stop) return StopReason::kStopRequested;
  if (options_.max_steps > 0 && step_ >= options_.max_steps) return StopReason::kStepLimit;
  return StopReason::kCompleted;
}

void Trainer::checkpoint(double epoch_loss_sum, int64_t epoch_samples, TrainResult& result) {
  if (options_.checkpoint_dir.empty()) return;
  TraceSpan span(options_.tracer, "train", "checkpoint");
  CheckpointState state;
  state.run = run_identity();
  state.step = step_;
  state.loader = loader_->state();
  state.scaler = scaler_.state();
  state.epoch_loss_sum = epoch_loss_sum;
  state.epoch_samples = epoch_samples;
  state.run_steps = schedule_->spec().total_steps;
  if (leads()) {
    throw_if_error(save_checkpoint(options_.checkpoint_dir, state, *model_, *optimizer_));
    result.checkpoint = latest_checkpoint(options_.checkpoint_dir).value_or_throw();
  }
  // The other ranks go on (or end) once the checkpoint is written: a failed write fails them too.
  if (options_.process_group) throw_if_error(options_.process_group->barrier());
}

std::vector<double> Trainer::sum_over_ranks(std::vector<double> values) const {
  if (!options_.process_group) return values;
  at::Tensor t = torch::tensor(values, torch::kFloat64);
  throw_if_error(options_.process_group->all_reduce({t}));
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

void Trainer::check_ranks_agree(const std::vector<std::pair<const char*, double>>& values,
                                const char* fix) const {
  std::vector<double> both;  // the maxima of the values and of their negations (the minima)
  for (const auto& named : values) both.push_back(named.second);
  for (const auto& named : values) both.push_back(-named.second);
  at::Tensor t = torch::tensor(both, torch::kFloat64);
  throw_if_error(options_.process_group->all_reduce({t}, ReduceOp::kMax));
  const double* r = t.data_ptr<double>();
  const size_t n = values.size();
  for (size_t i = 0; i < n; ++i) {
    if (r[i] != -r[n + i]) {
      throw Error(invalid_argument(fmt::format("the ranks differ in {} (from {} to {}): {}",
                                               values[i].first, -r[n + i], r[i], fix)));
    }
  }
}

}  // namespace stoker
