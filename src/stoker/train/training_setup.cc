#include "stoker/train/training_setup.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "stoker/access/data_source.h"
#include "stoker/cache/data_access.h"
#include "stoker/distributed/process_group.h"
#include "stoker/pipeline/field_pipeline.h"
#include "stoker/pipeline/frame_counts_memo.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/sample_cost.h"
#include "stoker/store/dataset_summary.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/store/import/video_record.h"
#include "stoker/train/default_generator.h"
#include "stoker/train/label_check.h"
#include "stoker/train/optimizers.h"
#include "stoker/train/rank_agreement.h"
#include "stoker/train/slow_configs.h"
#include "stoker/util/machine.h"

namespace stoker {
namespace {

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
  DataLocation where = remote::locate(dir).value_or_throw();
  if (where.train.empty()) {
    throw Error(not_found(fmt::format(
        "{} holds no train/ dataset (it holds {}): give one dataset, or a folder with train/ and "
        "test/ (or val/)",
        where.path, describe_splits(where))));
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

// Whether `data` holds videos: a bytes field 'video' (a video folder's records).
bool is_video_dataset(const Dataset& data) { return video_field(data.schema()) >= 0; }

// The model's input shape: the image field's (uint8 [C,H,W], or [H,W] as one channel), RGB at
// image_size for encoded images, or RGB clips of `frames` frames at image_size for videos.
ModelSpec input_spec(const Dataset& data, int image_size, int frames) {
  const Field& label = data.schema().fields()[require_field(data, "label", DType::kInt64)];
  require(label.is_fixed() && label.shape.empty(), data.dir() + ": field 'label' must be a scalar");
  ModelSpec spec;
  if (is_encoded_image_field(data.schema(), "image") || is_video_dataset(data)) {
    spec.channels = 3;
    spec.height = spec.width = image_size;
    if (is_video_dataset(data)) spec.frames = frames;
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

// The split at `path` as `auto` opens it (reading `window` shards at a time), but a video
// folder (local or at a URL) of which each video gives `clips` samples where clips > 1 (its
// clips_per_video: video/clips_per_video.h), so that the loader's order shuffles every video's
// clips together as torchvision's RandomClipSampler does, and evaluation's deals each clip as a
// sample. Other videos give theirs through the "per_record" order (per_record).
std::shared_ptr<const Dataset> open_split(const std::string& path, const TrainerOptions& o,
                                          int64_t window, int64_t clips) {
  if (clips > 1 && source_for("auto", path).value_or_throw()->name == "videofolder")
    return remote::open_dataset(path, o.data_access, window, "videofolder",
                                {{"clips_per_video", clips}})
        .value_or_throw();
  return remote::open_dataset(path, o.data_access, window).value_or_throw();
}

// The samples each record of `data` gives an epoch where each video gives `clips`: clips for
// videos whose records are not their clips already (a video folder's are), else 1.
int64_t per_record(const Dataset& data, int64_t clips) {
  return is_video_dataset(data) && data.manifest().sample_parts.empty() ? clips : 1;
}

// What a record's samples are to decode_clip (SourceContext::sample_parts): the dataset's own
// parts, or clips_per_video(K) where the order gives each record K samples.
std::string sample_parts(const Dataset& data, int64_t per_record) {
  if (per_record > 1) return clips_per_video_parts(per_record);
  return data.manifest().sample_parts;
}

// Refuses, in one line naming the data at `dir`, options that do not apply to its clips.
void check_video_options(const TrainerOptions& o, const std::string& dir) {
  const char* option = !o.augment_ops.empty()          ? "--augment"
                       : o.mixup_alpha > 0             ? "--mixup-alpha"
                       : o.cutmix_alpha > 0            ? "--cutmix-alpha"
                       : o.random_erase > 0            ? "--random-erase"
                       : o.dct_scaling                 ? "--dct-scaling"
                       : o.interpolation != "bilinear" ? "--interpolation"
                                                       : nullptr;
  require(option == nullptr,
          fmt::format("{}: a dataset of videos: {} does not apply to its clips (they take "
                      "--frames, --frame-step, --clips-per-video, --clips-together, "
                      "--eval-clips-per-video, --image-size, "
                      "--train-crop-size, --val-resize-size, --val-crop-size, --flip, --mean and "
                      "--std)",
                      dir, option ? option : ""));
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
// (for videos: `clips` clips) in the loader's buffers (at least kMinLoaderBuffers of them: auto
// prefetch 4, plus 2).
void check_batch_fits(const ModelSpec& spec, int64_t batch, int64_t clips) {
  constexpr double kMinLoaderBuffers = 6;
  const double pixels = static_cast<double>(spec.channels) * std::max<int64_t>(spec.frames, 1) *
                        spec.height * spec.width * static_cast<double>(clips);
  const double per_sample = pixels * sizeof(float) + kMinLoaderBuffers * (pixels + sizeof(int64_t));
  const double memory = static_cast<double>(machine_memory_bytes());
  if (memory == 0 || per_sample * static_cast<double>(batch) <= memory) return;
  throw Error(invalid_argument(fmt::format(
      "batch size {} needs at least {} for samples of {} (float model input and the loader's "
      "buffers), more than this machine's memory ({}): at most {} samples fit",
      batch, human_bytes(per_sample * static_cast<double>(batch)),
      fmt::format("[{}]", fmt::join(sample_shape(spec), ", ")), human_bytes(memory),
      static_cast<int64_t>(memory / per_sample))));
}

// Kinetics' statistics: torchvision's video reference normalises its clips with them.
const std::vector<float> kKineticsMean = {0.43216f, 0.394666f, 0.37645f};
const std::vector<float> kKineticsStd = {0.22803f, 0.22145f, 0.216989f};

// A video run's normalisation: --mean/--std where given, else Kinetics'.
NormalizationChoice video_normalization(const TrainerOptions& o) {
  NormalizationChoice c;
  const auto pick = [](const std::vector<float>& given, const std::vector<float>& fallback,
                       NormalizationSource& from) {
    from = given.empty() ? NormalizationSource::kDefault : NormalizationSource::kOption;
    return given.empty() ? fallback : given;
  };
  c.mean = pick(o.mean, kKineticsMean, c.mean_from);
  c.std = pick(o.std, kKineticsStd, c.std_from);
  c.phrase =
      fmt::format("mean {:.4f} std {:.4f} ({})", fmt::join(c.mean, " "), fmt::join(c.std, " "),
                  o.mean.empty() && o.std.empty() ? "Kinetics'" : "--mean/--std");
  return c;
}

// The clips' sampling, decode_clip's and clip_frame_indices' alike: `frames` frames
// `frame_step` apart; in training at random starts, clips_per_video of them together with
// clips_together, else one a sample (a dataset of clips_per_video(K) samples a video); in
// evaluation torchvision's UniformClipSampler's (one a sample of eval_clips_per_video).
std::vector<std::pair<std::string, ParamValue>> clip_sampling(const TrainerOptions& o, bool train) {
  return {{"sampler", std::string(train ? "random" : "uniform_clips")},
          {"num_frames_per_clip", int64_t{o.frames}},
          {"num_indices_between_frames", int64_t{o.frame_step}},
          {"num_clips", int64_t{train && o.clips_together ? o.clips_per_video : 1}}};
}

// The clips a sample of the training data holds: clips_per_video with clips_together, else one.
int64_t clips_a_sample(const TrainerOptions& o) { return o.clips_together ? o.clips_per_video : 1; }

// The training samples each video gives: clips_per_video, but one with clips_together.
int64_t clips_a_video(const TrainerOptions& o) { return o.clips_together ? 1 : o.clips_per_video; }

// The video field as clips for the model before normalisation, uint8 [K?, 3, frames, crop,
// crop] (K = clips_a_sample in training): decode_clip as torchvision's video reference
// transforms them (training: each clip its own random crop and flip; evaluation: the centre
// crop at val_crop_size), from the frames resized to val_resize_size; the videos' indexes kept
// in `cache_dir` (loader_cache_dir).
FieldRequest clip_request(const Dataset& data, const TrainerOptions& o, bool train,
                          int64_t per_record, const std::string& cache_dir,
                          FrameCountsMemo& frame_counts) {
  const int crop = train ? o.train_crop_size : o.val_crop_size;
  const int64_t resize = o.val_resize_size > 0 ? o.val_resize_size : crop * 128 / 112;
  std::vector<std::pair<std::string, ParamValue>> params = clip_sampling(o, train);
  params.insert(params.end(), {{"resize", std::vector<double>{static_cast<double>(resize)}},
                               {"crop", std::vector<double>{static_cast<double>(crop)}},
                               {"crop_mode", std::string(train ? "random" : "center")},
                               {"flip", train ? o.augment.flip_probability : 0.0},
                               {"draws", std::string("clip")},
                               {"layout", std::string("CTHW")}});
  const OpCall call = make_op_call("decode_clip", params).value_or_throw();
  return make_field_request(data.schema(), "video", {call}, {}, sample_parts(data, per_record),
                            cache_dir, &data, &frame_counts)
      .value_or_throw();
}

// The frame indices of clip_request's clips, int64 [K?, frames], as field kFrameIndicesField;
// `cache_dir` and `frame_counts` clip_request's, so that the videos' frame counts are read once.
FieldRequest frame_indices_request(const Dataset& data, const TrainerOptions& o, bool train,
                                   int64_t per_record, const std::string& cache_dir,
                                   FrameCountsMemo& frame_counts) {
  std::vector<std::pair<std::string, ParamValue>> params = clip_sampling(o, train);
  params.emplace_back("video", std::string("video"));
  const OpCall call = make_op_call("clip_frame_indices", params).value_or_throw();
  return make_field_request(data.schema(), kFrameIndicesField, {call}, {},
                            sample_parts(data, per_record), cache_dir, &data, &frame_counts)
      .value_or_throw();
}

// The image field as the model takes it before normalisation, uint8: as stored, or for encoded
// images torchvision's training (`train`) or evaluation transform at image_size; in training
// then the augment_ops, and where the loader normalises (normalizes_in_loader) normalised by
// `normalization` and randomly erased.
FieldRequest image_request(const Dataset& data, const TrainerOptions& o, bool train,
                           const NormalizationChoice& normalization) {
  std::vector<OpCall> calls;
  if (is_encoded_image_field(data.schema(), "image")) {
    const image::RandomResizedCropParams& crop = o.augment.crop;
    calls.push_back(
        (train ? make_op_call("random_resized_crop",
                              {{"size", int64_t{o.train_crop_size}},
                               {"scale", std::vector<double>{crop.scale_min, crop.scale_max}},
                               {"ratio", std::vector<double>{crop.ratio_min, crop.ratio_max}},
                               {"flip", o.augment.flip_probability},
                               {"interpolation", o.interpolation},
                               {"dct_scaling", o.dct_scaling}})
               : make_op_call("center_crop", {{"size", int64_t{o.val_crop_size}},
                                              {"resize", int64_t{o.val_resize_size}},
                                              {"interpolation", o.interpolation},
                                              {"dct_scaling", o.dct_scaling}}))
            .value_or_throw());
  }
  if (train)
    for (const std::string& text : o.augment_ops)
      calls.push_back(augment_op(text).value_or_throw());
  if (train && normalizes_in_loader(o)) {
    const auto reals = [](const std::vector<float>& v) {
      return std::vector<double>(v.begin(), v.end());
    };
    calls.push_back(make_op_call("normalize", {{"mean", reals(normalization.mean)},
                                               {"std", reals(normalization.std)}})
                        .value_or_throw());
    if (o.random_erase > 0)
      calls.push_back(make_op_call("random_erasing", {{"p", o.random_erase}}).value_or_throw());
  }
  return make_field_request(data.schema(), "image", calls).value_or_throw();
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
      "model {} for samples of {} and {} classes has {:.0f} parameters: with their gradients "
      "and {}'s state that is {}, more than this machine's memory ({})",
      model, fmt::format("[{}]", fmt::join(sample_shape(spec), ", ")), spec.num_classes, parameters,
      optimizer.name, human_bytes(bytes), human_bytes(memory))));
}

// Training batches' MixUp, CutMix or a choice of them (the reference's get_mixup_cutmix), over
// `num_classes`; null without.
std::shared_ptr<const BatchTransform> batch_mixing(const TrainerOptions& o, int64_t num_classes) {
  if (o.mixup_alpha <= 0 && o.cutmix_alpha <= 0) return nullptr;
  const ParamValue classes = int64_t{num_classes};
  const OpCall call =
      (o.cutmix_alpha <= 0
           ? make_op_call("mixup", {{"alpha", o.mixup_alpha}, {"num_classes", classes}})
       : o.mixup_alpha <= 0
           ? make_op_call("cutmix", {{"alpha", o.cutmix_alpha}, {"num_classes", classes}})
           : make_op_call("mixup_cutmix", {{"mixup_alpha", o.mixup_alpha},
                                           {"cutmix_alpha", o.cutmix_alpha},
                                           {"num_classes", classes}}))
          .value_or_throw();
  return call.op->make_batch(call.params).value_or_throw();
}

// A loader of `data`, each record `per_record` samples an epoch (the "per_record" order).
std::unique_ptr<Loader> make_loader(std::shared_ptr<const Dataset> data, const TrainerOptions& o,
                                    int64_t batch_size, bool train, const c10::Device& device,
                                    const NormalizationChoice& normalization, int64_t num_classes,
                                    int64_t per_record) {
  LoaderOptions lo;
  lo.batch_size = batch_size;
  if (o.process_group) {  // this rank's shard
    lo.rank = o.process_group->rank();
    lo.world_size = o.process_group->world_size();
  }
  static_cast<LoaderSettings&>(lo) = o.loader;
  lo.seed = o.seed;
  lo.shuffle = train;
  if (!train) lo.ra_reps = 1;  // evaluation sees each sample once
  if (per_record > 1) {
    lo.order = "per_record";
    lo.order_params = {{"samples", per_record},
                       {"window", lo.shuffle_window == kShuffleAll ? 0 : lo.shuffle_window}};
  }
  lo.tracer = o.tracer;
  // Images as uint8: InputNormalizer turns them into float where the model runs; clips float.
  const bool video = is_video_dataset(*data);
  FrameCountsMemo frame_counts;  // the clips' and their frame indices' requests read them once
  const std::string cache_dir = video ? loader_cache_dir(o.data_access) : std::string();
  lo.fields = {video ? clip_request(*data, o, train, per_record, cache_dir, frame_counts)
                     : image_request(*data, o, train, normalization),
               FieldRequest("label")};
  if (video)
    lo.fields.push_back(
        frame_indices_request(*data, o, train, per_record, cache_dir, frame_counts));
  if (train) lo.batch_transform = batch_mixing(o, num_classes);
  if (train && o.sample_cost.count() > 0)
    lo.fields.emplace_back(kSampleCostField, busy_wait_transform(o.sample_cost));
  return std::make_unique<Loader>(std::move(data), lo, device);
}

}  // namespace

Status validate(const TrainerOptions& o) {
  auto fail = [](const char* message) { return invalid_argument(message); };
  if (o.epochs < 1) return fail("epochs must be >= 1");
  if (o.accum < 1) return fail("accum must be >= 1");
  if (!(o.label_smoothing >= 0 && o.label_smoothing <= 1))
    return fail("label smoothing must be in [0, 1]");
  if (!(o.mixup_alpha >= 0 && std::isfinite(o.mixup_alpha)))
    return fail("mixup alpha must be >= 0 (0 = off)");
  if (!(o.cutmix_alpha >= 0 && std::isfinite(o.cutmix_alpha)))
    return fail("cutmix alpha must be >= 0 (0 = off)");
  if (!(o.random_erase >= 0 && o.random_erase <= 1))
    return fail("random erase must be in [0, 1] (0 = off)");
  if (!(o.clip_grad >= 0 && std::isfinite(o.clip_grad)))
    return fail("clip-grad must be >= 0 (0 = off)");
  if (o.max_steps < 0) return fail("max steps must be >= 0 (0 = no limit)");
  if (o.sample_cost.count() < 0) return fail("sample cost must be >= 0 (0 = none)");
  if (o.resume && o.checkpoint_dir.empty()) return fail("resume needs a checkpoint directory");
  if (o.image_size < 1) return fail("image size must be >= 1");
  if (o.frames < 1) return fail("frames must be >= 1");
  if (o.frame_step < 1) return fail("frame step must be >= 1");
  if (o.clips_per_video < 1) return fail("clips per video must be >= 1");
  if (o.eval_clips_per_video < 1) return fail("eval clips per video must be >= 1");
  if (o.train_crop_size < 0 || o.val_resize_size < 0 || o.val_crop_size < 0)
    return fail("crop and resize sizes must be >= 1 (0 = from the image size)");
  for (const std::string& text : o.augment_ops)
    if (Result<OpCall> op = augment_op(text); !op.is_ok()) return op.status();
  return Status();
}

bool normalizes_in_loader(const TrainerOptions& o) {
  return o.mixup_alpha > 0 || o.cutmix_alpha > 0 || o.random_erase > 0;
}

namespace {

// Whether `call`, or a call in its combinator's lists, is a ColorJitter with saturation or hue,
// which change nothing on 1-channel images (as torchvision's).
bool jitters_colour(const OpCall& call) {
  if (call.op->name == "color_jitter")
    return call.params.real("saturation") != 0 || call.params.real("hue") != 0;
  for (const ParamSpec& p : call.op->params) {
    if (p.type != ParamType::kOps) continue;
    Result<std::vector<OpCall>> inner = parse_op_list(call.params.ops(p.name));
    if (!inner.is_ok()) continue;
    for (const OpCall& c : inner.value())
      if (jitters_colour(c)) return true;
  }
  return false;
}

}  // namespace

Result<OpCall> augment_op(const std::string& text) {
  Result<OpCall> call = parse_op_call(text);
  if (!call.is_ok() || call.value().op->role == OpRole::kPixel) return call;
  std::vector<std::string> pixel;
  for (const OpSpec& op : operations())
    if (op.role == OpRole::kPixel) pixel.push_back(op.name);
  return invalid_argument(fmt::format("{} is not an augmentation (a pixel operation: {})",
                                      call.value().op->name, fmt::join(pixel, ", ")));
}

int64_t TrainingSetup::steps_per_epoch() const {
  return (loader->batches_per_epoch() + options.accum - 1) / options.accum;
}

std::unique_ptr<TrainingSetup> set_up_training(TrainerOptions options) {
  throw_if_error(validate(options));
  auto setup = std::make_unique<TrainingSetup>();
  TrainingSetup& s = *setup;
  s.options = std::move(options);
  TrainerOptions& o = s.options;
  if (o.train_crop_size == 0) o.train_crop_size = o.image_size;
  if (o.val_crop_size == 0) o.val_crop_size = o.image_size;
  for (std::string& op : o.augment_ops) op = to_text(augment_op(op).value_or_throw());
  if (o.process_group) {
    s.rank = o.process_group->rank();
    s.world_size = o.process_group->world_size();
  }
  s.device = resolve_device(o.device);
  s.scaler = LossScaler(o.amp);
  { AutocastGuard probe(o.amp, s.device.type()); }  // rejects a mode this device lacks, early
  s.threads = at::get_num_threads();

  const DataLocation data = resolve_data(o.data_dir);
  s.train_data = open_split(data.train, o, o.loader.shuffle_window, clips_a_video(o));
  s.train_per_record = per_record(*s.train_data, clips_a_video(o));
  if (o.eval && data.eval.empty()) {
    o.eval = false;
    s.eval_note =
        "not evaluating: " + data.path +
        (data.folder ? " holds train/ but no test/ or val/ to evaluate on"
                     : " is one dataset (a folder with train/ and test/ or val/ is evaluated on "
                       "the second)");
  }
  const Dataset& train = *s.train_data;
  require(train.size() > 0, train.dir() + " holds no records: there is nothing to train on");
  s.spec = input_spec(train, o.train_crop_size, o.frames);
  s.input_field = is_video_dataset(train) ? "video" : "image";
  if (s.spec.frames > 0) {
    check_video_options(o, train.dir());
  } else {
    require(o.frame_step == 1 && o.clips_per_video == 1 && o.eval_clips_per_video == 1 &&
                !o.clips_together,
            train.dir() +
                ": --frame-step, --clips-per-video, --eval-clips-per-video and --clips-together "
                "apply to datasets of videos");
  }
  s.spec.num_classes = count_classes(train).value_or_throw();
  check_labels(train, s.spec.num_classes);
  const int64_t largest_batch = o.eval ? std::max(o.batch_size, kEvalBatchSize) : o.batch_size;
  check_batch_fits(s.spec, largest_batch, s.spec.frames > 0 ? clips_a_sample(o) : 1);
  const int64_t train_samples = static_cast<int64_t>(train.size()) * s.train_per_record;
  require(
      o.batch_size * s.world_size <= train_samples,
      fmt::format("batch size {}{} is more than the {} samples of {}: every batch would be "
                  "all of them; use a batch size of at most {}",
                  o.batch_size, s.world_size > 1 ? fmt::format(" x {} ranks", s.world_size) : "",
                  train_samples, train.dir(), std::max<int64_t>(1, train_samples / s.world_size)));
  if (o.eval) {
    s.test_data = open_split(data.eval, o, remote::kShardByShard, o.eval_clips_per_video);
    s.test_per_record = per_record(*s.test_data, o.eval_clips_per_video);
    const Dataset& test = *s.test_data;
    s.eval_note = fmt::format("evaluating on {} ({} samples) after each epoch", test.dir(),
                              test.size() * s.test_per_record);
    require(test.schema() == train.schema(),
            test.dir() + " has another schema than " + train.dir());
    require(test.size() > 0, test.dir() + " holds no records");
    check_same_classes(train, test);
    check_labels(test, s.spec.num_classes);
  }

  const double builtin_parameters = builtin_parameter_count(o.model, s.spec);
  if (o.eval && is_encoded_image_field(train.schema(), "image") &&
      o.val_crop_size != o.train_crop_size) {
    ModelSpec eval_spec = s.spec;
    eval_spec.height = eval_spec.width = o.val_crop_size;
    require(
        builtin_parameters < 0 || builtin_parameter_count(o.model, eval_spec) == builtin_parameters,
        fmt::format("model {} takes inputs of one size: --val-crop-size {} needs "
                    "--train-crop-size {} too (resnet18 takes both)",
                    o.model, o.val_crop_size, o.val_crop_size));
  }
  if (builtin_parameters >= 0) check_model_fits(o.model, s.spec, builtin_parameters, o.optimizer);
  {
    const ScopedSeed seeded(o.seed);  // initialised from the seed; the caller's stream untouched
    s.model = make_model(o.model, s.spec);
  }
  Model& model = *s.model;
  throw_if_error(check_output_shape(model, s.spec, o.verbose));
  model.to(s.device);
  model.train(true);
  s.params = model.parameters();
  if (o.process_group) {
    // The same run on every rank, else their collectives would not match ...
    double parameters = 0;
    for (const auto& named : model.named_state()) parameters += named.second.numel();
    check_ranks_agree(o.process_group,
                      {{"model parameters and buffers", parameters},
                       {"training samples", static_cast<double>(train_samples)},
                       {"batch size", static_cast<double>(o.batch_size)},
                       {"accum", static_cast<double>(o.accum)},
                       {"epochs", static_cast<double>(o.epochs)},
                       {"max steps", static_cast<double>(o.max_steps)},
                       {"evaluation", o.eval ? 1.0 : 0.0}},
                      "every rank must be given the same data, model and options");
    // ... starting from rank 0's parameters and buffers.
    std::vector<at::Tensor> state;
    for (const auto& named : model.named_state()) state.push_back(named.second);
    torch::NoGradGuard no_grad;
    throw_if_error(o.process_group->broadcast(state, 0));
  }
  double parameters = 0;
  for (const at::Tensor& p : s.params) parameters += static_cast<double>(p.numel());
  check_model_fits(model.name(), s.spec, parameters, o.optimizer);  // a TorchScript model's
  require(std::any_of(s.params.begin(), s.params.end(),
                      [](const at::Tensor& p) { return p.requires_grad(); }),
          "model " + model.name() + " has no trainable parameters: nothing to train");
  s.optimizer = make_optimizer(o.optimizer, s.params);
  if (o.process_group) s.reducer = std::make_unique<GradientReducer>(*o.process_group, s.params);

  const bool encoded = is_encoded_image_field(train.schema(), "image");
  const bool video = s.spec.frames > 0;
  const Schema& schema = train.schema();
  // The training data's own statistics (unless given), for training and evaluation alike.
  s.normalization =
      video ? video_normalization(o)
            : choose_normalization(train.manifest(), train.dir(), encoded, o.mean, o.std);
  // The loaders check batch_size and workers (LoaderOptions) before anything uses them.
  s.loader = make_loader(s.train_data, o, o.batch_size, /*train=*/true, s.device, s.normalization,
                         s.spec.num_classes, s.train_per_record);
  s.workers = o.loader.workers.is_tuned() ? o.loader.workers
                                          : WorkerCount(s.loader->options().workers.threads());
  if (o.eval)
    s.test_loader = make_loader(s.test_data, o, kEvalBatchSize, /*train=*/false, s.device,
                                s.normalization, s.spec.num_classes, s.test_per_record);
  s.warnings = slow_configuration_warnings(
      o.amp, s.device.is_cpu(), bf16_not_native(machine_cpu_flags(), libtorch_cpu_capability()),
      s.threads, s.workers.is_tuned() ? 1 : s.workers.threads(), machine_cores());
  if (!s.normalization.warning.empty()) s.warnings.push_back(s.normalization.warning);
  if (s.spec.channels == 1) {
    for (const std::string& op : o.augment_ops)
      if (jitters_colour(augment_op(op).value_or_throw()))
        s.warnings.push_back("warning: --augment " + op +
                             ": saturation and hue leave 1-channel images unchanged (as "
                             "torchvision's ColorJitter does)");
  }
  const std::vector<int64_t> stored =
      encoded || video ? std::vector<int64_t>{} : schema.fields()[schema.find("image")].shape;
  const auto shape_at = [&](int64_t side) {
    return encoded ? std::vector<int64_t>{s.spec.channels, side, side} : stored;
  };
  // A clip [C, T, side, side] normalised as the sample [C, T, side * side] it is in memory
  // (Normalization's channels are a 3-D sample's first dimension); a batch of B videos is B x K
  // clips in training.
  const auto normalized_at = [&](int64_t side) {
    return video ? std::vector<int64_t>{s.spec.channels, s.spec.frames, side * side}
                 : shape_at(side);
  };
  s.normalize = std::make_unique<InputNormalizer>(
      normalized_at(s.spec.height), s.normalization.mean, s.normalization.std,
      o.batch_size * (video ? clips_a_sample(o) : 1), s.device);
  if (o.eval) {
    s.eval_shape = video ? std::vector<int64_t>{s.spec.channels, s.spec.frames, o.val_crop_size,
                                                o.val_crop_size}
                         : shape_at(o.val_crop_size);
    s.eval_normalize =
        std::make_unique<InputNormalizer>(normalized_at(o.val_crop_size), s.normalization.mean,
                                          s.normalization.std, kEvalBatchSize, s.device);
  }
  ScheduleSpec schedule = o.schedule;
  schedule.lr = o.optimizer.lr;
  const int64_t steps_per_epoch = s.steps_per_epoch();
  require(o.epochs <= std::numeric_limits<int64_t>::max() / steps_per_epoch,
          fmt::format("{} epochs of {} optimizer steps are more steps than a run can count",
                      o.epochs, steps_per_epoch));
  schedule.total_steps = o.epochs * steps_per_epoch;
  const bool decays =
      schedule.kind == ScheduleKind::kCosine || schedule.kind == ScheduleKind::kOneCycle;
  require(!decays || schedule.total_steps > schedule.warmup_steps,
          fmt::format("--warmup {} is not shorter than the run: --epochs {} of {} optimizer steps "
                      "are {} steps, and the {} schedule decays after the warm-up; lower --warmup "
                      "or raise --epochs",
                      schedule.warmup_steps, o.epochs, steps_per_epoch, schedule.total_steps,
                      to_string(schedule.kind)));
  s.schedule = std::make_unique<LrSchedule>(schedule);
  return setup;
}

}  // namespace stoker
