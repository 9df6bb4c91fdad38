#include "cli/train_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/utils.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "cli/augment_option.h"
#include "cli/data_access_options.h"
#include "cli/loader_settings_options.h"
#include "cli/usage.h"
#include "stoker/pipeline/op_registry.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/train/compute_settings.h"
#include "stoker/train/models.h"
#include "stoker/train/slow_configs.h"
#include "stoker/util/machine.h"

namespace stoker::cli {
namespace {

// --model: a built-in name or a TorchScript file.
CLI::Validator model_name() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        const std::vector<std::string>& builtin = builtin_model_names();
        if (std::find(builtin.begin(), builtin.end(), name) != builtin.end() ||
            (name.size() > 3 && name.compare(name.size() - 3, 3, ".pt") == 0))
          return "";
        const std::string near = closest_match(name, builtin);
        throw UsageError(fmt::format(
            "--model: unknown model '{}' ({}choose {} or a TorchScript file ending in .pt)", name,
            near.empty() ? "" : "did you mean '" + near + "'? ", fmt::join(builtin, ", ")));
      },
      "", "model_name");
}

// The most clips decode_clip decodes in one sample (its num_clips' bound); none in a build
// without video, which has no decode_clip.
std::optional<int64_t> most_clips_a_sample() {
  const Result<const OpSpec*> op = find_operation("decode_clip");
  if (!op.is_ok()) return std::nullopt;
  for (const ParamSpec& p : op.value()->params)
    if (p.name == "num_clips" && p.max) return static_cast<int64_t>(*p.max);
  return std::nullopt;
}

// Options that are each in range but contradict each other, named as the command line gives
// them (the library's checks name its fields). Throws UsageError.
void check_option_pairs(const TrainerOptions& o) {
  const OptimizerSpec& opt = o.optimizer;
  if (opt.momentum >= 1)
    throw UsageError(fmt::format("--momentum must be below 1, not {}", opt.momentum));
  if (opt.name != "sgd" && (opt.momentum != 0 || opt.nesterov))
    throw UsageError(
        fmt::format("--momentum and --nesterov apply to --optimizer sgd, not {}", opt.name));
  if (opt.nesterov && opt.momentum == 0) throw UsageError("--nesterov needs --momentum above 0");
  const ScheduleKind kind = o.schedule.kind;
  if ((kind == ScheduleKind::kCosine || kind == ScheduleKind::kOneCycle) &&
      o.schedule.min_lr > opt.lr)
    throw UsageError(
        fmt::format("--min-lr {} is above --lr {}: the {} schedule decays from --lr to --min-lr",
                    o.schedule.min_lr, opt.lr, to_string(kind)));
  if (const std::optional<int64_t> most = most_clips_a_sample();
      o.clips_together && most && o.clips_per_video > *most)
    throw UsageError(fmt::format(
        "--clips-per-video {} with --clips-together: at most {} clips are decoded together, a "
        "sample per video (without --clips-together, each clip its own sample: up to 1024)",
        o.clips_per_video, *most));
  const image::RandomResizedCropParams& crop = o.augment.crop;
  if (crop.ratio_min > crop.ratio_max)
    throw UsageError(fmt::format("--crop-ratio-min {} is above --crop-ratio-max {}", crop.ratio_min,
                                 crop.ratio_max));
}

// timm's RandAugment strings, "rand" and its sections ("rand-m9-mstd0.5-inc1").
bool is_timm_rand(const std::string& policy) {
  return policy == "rand" || policy.rfind("rand-", 0) == 0;
}

}  // namespace

void add_run_options(CLI::App& command, TrainerOptions& o, TrainFlags& flags) {
  command
      .add_option("--data", o.data_dir,
                  "A folder with train/ and test/ (or val/) datasets, or one dataset (trained "
                  "on, not evaluated), or its s3:// or http(s):// URL (default: Fashion-MNIST, "
                  "converted into $STOKER_DATA or ~/.cache/stoker on first use)")
      ->check(path_value("--data"));
  add_data_access_options(command, o.data_access);
  command
      .add_option(
          "--model", o.model,
          fmt::format("{}, or a TorchScript file (.pt)", fmt::join(builtin_model_names(), ", ")))
      ->check(model_name())
      ->capture_default_str();
  add_whole_number(command, "--batch", o.batch_size, "Batch size", 1)->capture_default_str();
  add_choice(command, "--optimizer", o.optimizer.name, "{}", kOptimizerNames.names())
      ->capture_default_str();
  command.add_option("--lr", o.optimizer.lr, "Learning rate (peak lr of the schedule)")
      ->check(real_number("--lr", 0, false))
      ->capture_default_str();
  command.add_option("--momentum", o.optimizer.momentum, "SGD momentum, in [0, 1)")
      ->check(real_number("--momentum", 0, true));
  command.add_flag("--nesterov", o.optimizer.nesterov, "SGD with Nesterov momentum");
  command
      .add_option("--weight-decay", flags.weight_decay,
                  "Weight decay (default: 0 for sgd and adam, 0.01 for adamw)")
      ->check(real_number("--weight-decay", 0, true));
  add_choice(command, "--schedule", flags.schedule, "{}", kScheduleKindNames.names())
      ->capture_default_str();
  add_whole_number(command, "--warmup", o.schedule.warmup_steps, "Linear warm-up steps", 0)
      ->capture_default_str();
  add_whole_number(command, "--step-size", o.schedule.step_size,
                   "step schedule: steps between decays", 1);
  command.add_option("--gamma", o.schedule.gamma, "step schedule: decay factor")
      ->check(real_number("--gamma", 0, false));
  command.add_option("--min-lr", o.schedule.min_lr, "cosine and one-cycle: final lr")
      ->check(real_number("--min-lr", 0, true));
  add_choice(command, "--amp", flags.amp,
             "Mixed precision: {} (bf16 on the CPU or CUDA, fp16 on CUDA)", kAmpModeNames.names())
      ->capture_default_str();
  add_whole_number(command, "--accum", o.accum,
                   "Batches per optimizer step (gradient accumulation)", 1)
      ->capture_default_str();
  command.add_option("--clip-grad", o.clip_grad, "Clip the gradient norm to this (0: off)")
      ->check(real_number("--clip-grad", 0, true))
      ->capture_default_str();
  command
      .add_option("--label-smoothing", o.label_smoothing,
                  "The cross-entropy's label smoothing (torchvision's reference's; 0: off)")
      ->check(real_number("--label-smoothing", 0, true, 1))
      ->capture_default_str();
  command
      .add_option("--mixup-alpha", o.mixup_alpha,
                  "MixUp of the training batches, Beta(alpha, alpha) (torchvision's reference's; "
                  "0: off; with --cutmix-alpha, one of the two per batch); soft targets")
      ->check(real_number("--mixup-alpha", 0, true))
      ->capture_default_str();
  command
      .add_option("--cutmix-alpha", o.cutmix_alpha,
                  "CutMix of the training batches, Beta(alpha, alpha) (the reference's; 0: off)")
      ->check(real_number("--cutmix-alpha", 0, true))
      ->capture_default_str();
  command
      .add_option("--random-erase", o.random_erase,
                  "Probability of RandomErasing each normalised training image (the "
                  "reference's; 0: off)")
      ->check(real_number("--random-erase", 0, true, 1))
      ->capture_default_str();
  add_whole_number(
      command, "--threads", flags.threads,
      "LibTorch intra-op threads (default 0: the cores the loader's workers leave; with "
      "--workers auto, those one worker leaves)",
      0, machine_cores(), "the cores of this machine")
      ->capture_default_str();
  command.add_option("--device", o.device, "cpu, cuda or cuda:N (default: cuda if available)")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            const bool cuda_n = name.rfind("cuda:", 0) == 0 && name.size() > 5 &&
                                name.find_first_not_of("0123456789", 5) == std::string::npos;
            if (name == "cpu" || name == "cuda" || cuda_n) return "";
            throw UsageError("--device: unknown device '" + name +
                             "' (choose cpu, cuda or cuda:N)");
          },
          "", "device"));
  add_loader_settings_options(command, o.loader, {});
  add_whole_number(command, "--seed", o.seed, "Seed of model initialisation and data order", 0)
      ->capture_default_str();
  command
      .add_option("--mean", o.mean,
                  "Per-channel input mean in [0, 1] units (default: the training data's, from "
                  "its manifest; for data converted by an older stoker, ImageNet's for JPEG/PNG "
                  "datasets and Fashion-MNIST's 0.2860 for stored pixels)")
      ->check(real_number("--mean", std::numeric_limits<double>::lowest(), true));
  command
      .add_option("--std", o.std,
                  "Per-channel input standard deviation (default: the training data's; without "
                  "statistics, ImageNet's or 0.3530)")
      ->check(real_number("--std", 0, false));
  command
      .add_option("--image-size", o.image_size,
                  "JPEG/PNG datasets: side of the square crops the model sees")
      ->check(whole_number("--image-size", 1, kMaxImageSize))
      ->capture_default_str();
  command
      .add_option("--train-crop-size", o.train_crop_size,
                  "JPEG/PNG datasets: side of the training crops (the reference's; default: "
                  "--image-size)")
      ->check(whole_number("--train-crop-size", 1, kMaxImageSize));
  command
      .add_option("--val-resize-size", o.val_resize_size,
                  "JPEG/PNG datasets: evaluation's Resize before its CenterCrop (the reference's; "
                  "default: the crop's side x 256 / 224)")
      ->check(whole_number("--val-resize-size", 1, kMaxImageSize));
  command
      .add_option("--val-crop-size", o.val_crop_size,
                  "JPEG/PNG datasets: side of evaluation's CenterCrop (the reference's; default: "
                  "--image-size)")
      ->check(whole_number("--val-crop-size", 1, kMaxImageSize));
  command
      .add_option("--frames", o.frames,
                  "Video datasets: frames per clip (the model sees [3, frames, crop, crop]; the "
                  "crop is --image-size)")
      ->check(whole_number("--frames", 1, 1024))
      ->capture_default_str();
  command
      .add_option("--frame-step", o.frame_step,
                  "Video datasets: frames between a clip's consecutive frames (torchcodec's "
                  "num_indices_between_frames; 1: consecutive)")
      ->check(whole_number("--frame-step", 1, 1024))
      ->capture_default_str();
  command
      .add_option("--clips-per-video", o.clips_per_video,
                  "Video datasets: random clips of each video in a training epoch, each its own "
                  "sample shuffled among all videos' clips (the video reference's)")
      ->check(whole_number("--clips-per-video", 1, 1024))
      ->capture_default_str();
  command.add_flag("--clips-together", o.clips_together,
                   "Video datasets: decode each video's --clips-per-video clips together, a "
                   "sample per video (shared GOP decodes; a batch of B videos is B x K clips)");
  command
      .add_option("--eval-clips-per-video", o.eval_clips_per_video,
                  "Video datasets: clips of each video evaluated, evenly spaced (the "
                  "reference's UniformClipSampler); clip and video accuracy reported")
      ->check(whole_number("--eval-clips-per-video", 1, 1024))
      ->capture_default_str();
  add_choice(command, "--interpolation", o.interpolation,
             "JPEG/PNG datasets: the resize filter, PIL's {} (torchvision's pixels either way)",
             {"bilinear", "bicubic"})
      ->capture_default_str();
  command
      .add_option("--crop-scale", o.augment.crop.scale_min,
                  "RandomResizedCrop: smallest crop, as a fraction of the image's area")
      ->check(real_number("--crop-scale", 0, false, 1))
      ->capture_default_str();
  command
      .add_option("--crop-ratio-min", o.augment.crop.ratio_min,
                  "RandomResizedCrop: smallest aspect ratio (width / height)")
      ->check(real_number("--crop-ratio-min", 0, false))
      ->capture_default_str();
  command
      .add_option("--crop-ratio-max", o.augment.crop.ratio_max,
                  "RandomResizedCrop: largest aspect ratio")
      ->check(real_number("--crop-ratio-max", 0, false))
      ->capture_default_str();
  command
      .add_option("--flip", o.augment.flip_probability,
                  "Probability of a horizontal flip of a training image")
      ->check(real_number("--flip", 0, true, 1))
      ->capture_default_str();
  add_augment_option(command, o.augment_ops);
  // torchvision's reference's names, or timm's RandAugment string, which its factory checks.
  const CLI::Validator policy = one_of(
      "--auto-augment", {"ta_wide", "ra", "imagenet", "cifar10", "svhn", "rand-m9-mstd0.5-inc1"});
  command
      .add_option("--auto-augment", flags.auto_augment,
                  "An augmentation policy after the crop, before the --augment operations, as "
                  "torchvision's reference names them: ta_wide (TrivialAugmentWide), ra "
                  "(RandAugment), imagenet, cifar10 or svhn (AutoAugment's policies); or timm's "
                  "RandAugment string, as its --aa (rand-m9-mstd0.5-inc1; fill: timm's img_mean, "
                  "255 x --mean where given, else 128); with --interpolation")
      ->check(CLI::Validator(
          [policy](std::string& text) { return is_timm_rand(text) ? std::string() : policy(text); },
          "", "policy"));
  command.add_flag("--dct-scaling", flags.dct_scaling,
                   "JPEG/PNG datasets: the fast mode, decoding large JPEG crops at a reduced DCT "
                   "scale (pixels differ from torchvision's; without it they are its exactly)");
  command.add_flag("--verbose", o.verbose,
                   "Errors a model raises in full (a TorchScript model's traceback)");
  add_whole_number(command, "--sample-cost-us", flags.sample_cost_us,
                   "A synthetic cost per training sample, busy-waited on a loader worker (to "
                   "make a data-bound run on demand; 0: none)",
                   0, 10'000'000);
}

void apply_run_flags(const TrainFlags& flags, TrainerOptions& options) {
  options.schedule.kind = parse_schedule_kind(flags.schedule).value_or_throw();
  options.amp = parse_amp_mode(flags.amp).value_or_throw();
  if (flags.weight_decay >= 0) options.optimizer.weight_decay = flags.weight_decay;
  options.dct_scaling = flags.dct_scaling;
  if (!flags.auto_augment.empty()) {
    const std::string& policy = flags.auto_augment;
    std::string call = policy == "ta_wide" ? "trivial_augment_wide"
                       : policy == "ra"    ? "rand_augment"
                                           : "auto_augment:policy=" + policy;
    if (is_timm_rand(policy)) {
      call = "timm_rand_augment:config=" + policy;
      // timm's img_mean: min(255, round(255 x mean)), Python's round (half to even).
      std::vector<double> fill;
      for (float m : options.mean)
        fill.push_back(std::clamp(std::nearbyint(255.0 * m), 0.0, 255.0));
      if (!fill.empty()) call += ",fill=" + to_text(ParamValue(fill));
    }
    options.augment_ops.insert(options.augment_ops.begin(),
                               call + (call.find(':') == std::string::npos ? ":" : ",") +
                                   "interpolation=" + options.interpolation);
  }
  options.sample_cost = std::chrono::microseconds(flags.sample_cost_us);
  check_option_pairs(options);
}

// Converts the default data (Fashion-MNIST) into `dir` unless it is there, saying so on `say`
// (null: silently).
void convert_default_data(const std::string& dir, std::FILE* say) {
  if (fashion_mnist_converted(dir)) return;
  if (say)
    fmt::print(say, "converting Fashion-MNIST from {} into {}\n", kFashionMnistDebianDir, dir);
  throw_if_error(convert_fashion_mnist(kFashionMnistDebianDir, dir, /*skip_existing=*/true));
}

void use_default_data(TrainerOptions& options, std::FILE* say) {
  if (!options.data_dir.empty()) return;
  options.data_dir = default_fashion_mnist_dir();
  convert_default_data(options.data_dir, say);
}

int apply_process_settings(const TrainFlags& flags, const TrainerOptions& options, int cores) {
  const int threads = resolve_compute_threads(
      flags.threads, options.loader.workers.is_tuned() ? 1 : options.loader.workers.threads(),
      cores);
  set_compute_settings(threads);
  torch::manual_seed(options.seed);
  return threads;
}

}  // namespace stoker::cli
