#pragma once
// The operation registry: every operation a batch field can be made with (decode and crop,
// normalise, colour changes, ...) described once, by its name, its parameters (type, default,
// bounds) and its factory. The Python package (stoker._stoker.operations()) and the CLI
// (`stoker ops`, `--augment NAME:key=value,...`) read this description; parameters are checked
// here, once, so a wrong one gets the same one-line error from both ("color_jitter: brightness
// must be a number at least 0, not -1").
//
// An operation is one file, ops/NAME.cc, defining `OpSpec stoker::ops::NAME()`; the build
// lists the files of ops/ itself (src/stoker/pipeline/CMakeLists.txt), so adding one touches
// nothing else. field_pipeline.h composes a field from a list of calls.
//
// The table is built on first use and immutable after: thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "stoker/pipeline/batch_transform.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/joint_sample.h"
#include "stoker/pipeline/sample_type.h"
#include "stoker/pipeline/transform.h"
#include "stoker/store/schema.h"
#include "stoker/util/param_spec.h"
#include "stoker/util/status.h"

namespace stoker {

class Dataset;
class FrameCountsMemo;

// What an operation takes and makes, which decides where it may stand in a field's list:
//   kSource     encoded record -> image: makes the field's sample from the record (decode and
//               crop an image, a synthetic field); first, or none (the stored field, as stored)
//   kPixel      image -> image: changes a uint8 [C, H, W] sample in place, or makes one of
//               another H and W (a ResizingPixelOp: a crop to another size); after the source.
//               The next operation is made for the shape it makes; the field's is the last's
//   kNormalize  image -> float: uint8 to float32 (x / 255 - mean[c]) / std[c] (parameters
//               "mean" and "std"); at most one
//   kFloat      float -> float: changes the float32 [C, H, W] sample in place; after normalize
//   kBatch      batch -> batch: changes the finished batch as a whole (MixUp, CutMix), not one
//               field's sample: the loader's batch transform (batch_transform.h), at most one
//   kJoint      sample -> sample: changes a detection sample's image, boxes, labels and masks
//               together (a flip, dropping degenerate boxes): joint_pipeline.h's operations
// Every operation after the source draws from its own random stream of the sample; a batch
// operation from the batch's stream.
enum class OpRole { kSource, kPixel, kNormalize, kFloat, kBatch, kJoint };

// Which of torchvision's two backends an operation's pixels equal for the same draws:
//   kPil     its PIL kernels (a step before PILToTensor, ToImage or ToTensor in the user's Compose)
//   kTensor  its uint8 tensor kernels (a step after one)
//   kBoth    both: the two backends are bit-equal there (flips, crops, invert, posterize, ...)
// stoker.transforms runs natively only a step whose backend matches the pipeline's where it
// stands. Every operation declares one (kUnset is a mistake); python/tests/test_backends.py
// checks each claim against torchvision. A combinator's is its operations'; an operation with a
// "backend" parameter (color_jitter) equals the backend its call names, this its default's.
enum class OpBackend { kUnset, kPil, kTensor, kBoth };

// A kPixel operation made for one field. Thread-safety: apply() runs concurrently on every
// worker.
class PixelOp {
 public:
  virtual ~PixelOp() = default;
  // Changes the sample at `pixels` (the shape it was made for). input.rng() is this operation's
  // own stream of the sample (field_pipeline.h). A Status for a sample it cannot change.
  virtual Status apply(const SampleInput& input, uint8_t* pixels) const = 0;
};

// A kPixel operation that may change the image's height and width (a crop to another size):
// apply_to makes its image, output_shape() [C, H', W'], from the input (the shape it was made
// for) in another buffer. Its in-place apply() is for an output of the input's shape only (a
// combinator's operations, which keep the shape).
class ResizingPixelOp : public PixelOp {
 public:
  virtual const std::vector<int64_t>& output_shape() const = 0;
  virtual Status apply_to(const SampleInput& input, const uint8_t* in, uint8_t* out) const = 0;
};

// The shape `op`, made for an image of `shape`, makes.
inline const std::vector<int64_t>& output_shape(const PixelOp& op,
                                                const std::vector<int64_t>& shape) {
  const auto* resizing = dynamic_cast<const ResizingPixelOp*>(&op);
  return resizing ? resizing->output_shape() : shape;
}

// A kFloat operation made for one field: as PixelOp, on the float32 sample.
class FloatOp {
 public:
  virtual ~FloatOp() = default;
  virtual Status apply(const SampleInput& input, float* values) const = 0;
};

// A kJoint operation: changes a whole sample (JointSample) in place. input.rng() is its own
// stream of the sample. A Status (naming the field) for a sample it cannot change.
// Thread-safety: apply() runs concurrently on every worker.
class JointOp {
 public:
  virtual ~JointOp() = default;
  virtual Status apply(const SampleInput& input, JointSample& sample) const = 0;
  // Whether apply() takes a sample whose resize or mirror still waits on its pixels
  // (JointSample::settled() false) and leaves it waiting or applies it (ops/joint_canvas.h);
  // the pipeline settles the sample before the other operations.
  virtual bool takes_unsettled() const { return false; }
};

// What a kSource factory makes its transform for.
struct SourceContext {
  const Schema* schema = nullptr;
  std::string field;   // the batch field's name (a stored field's, or a new one)
  ImageOutput output;  // an image source writes this: uint8, or float32 normalised
  // How the dataset's records give several samples (Manifest::sample_parts; "" : one each): a
  // video folder's clips, which decode_clip's sampler "video_clips" decodes.
  std::string sample_parts;
  // The dataset read (null: not known), which a factory may read while it makes its transform:
  // decode_clip's sampler "uniform_clips" numbers each video's clips in it as torchvision's
  // UniformClipSampler does (pipeline/video_frame_counts.h).
  const Dataset* dataset = nullptr;
  // The cache folder where a source keeps what it learns of records between runs (decode_clip:
  // each video's index, video/video_cache.h); "": nothing kept.
  std::string cache_dir;
  // The frame counts read for the loader's other field requests, shared with them so that the
  // dataset's videos are read once (frame_counts_memo.h; owned by the requests' maker, null:
  // each factory reads its own).
  FrameCountsMemo* frame_counts = nullptr;
};

// What a kPixel or kFloat factory makes its operation for.
struct PixelContext {
  std::string field;
  std::vector<int64_t> shape;  // the uint8 sample's, as the operations before this one make it

  // Ok for an image sample [1 or 3, H, W]; else the error of operation `op`, naming the field.
  Status check_image(const std::string& op) const;
};

// The sample types the operations of `role` take and make (sample_type.h): what their
// factories' interfaces fix (a PixelOp changes uint8 images, ...); a source makes a uint8 image
// unless its spec says otherwise.
struct RoleTypes {
  SampleType input, output;
};
RoleTypes role_types(OpRole role);

struct OpSpec {
  std::string name;  // lower_snake_case
  OpRole role = OpRole::kPixel;
  std::string doc;  // one sentence
  // What it takes and makes (sample_type.h): the role's (role_types) where unset;
  // only a source's output may differ from its role's (the table refuses other differences).
  std::optional<SampleType> input, output;
  // kPixel, kFloat: the class stoker.transforms builds from this description (e.g.
  // "ColorJitter"), and the torchvision class it translates.
  std::string python_class;
  OpBackend backend = OpBackend::kUnset;
  std::vector<ParamSpec> params;
  // The role's factory (kNormalize has none: field_pipeline.h reads its mean and std). Errors
  // are kInvalidArgument naming the context's field.
  std::function<Result<std::shared_ptr<const Transform>>(const Params&, const SourceContext&)>
      make_source;
  std::function<Result<std::shared_ptr<const PixelOp>>(const Params&, const PixelContext&)>
      make_pixel;
  std::function<Result<std::shared_ptr<const FloatOp>>(const Params&, const PixelContext&)>
      make_float;
  // kBatch: the batch transform; it checks the fields it is given in outputs().
  std::function<Result<std::shared_ptr<const BatchTransform>>(const Params&)> make_batch;
  // kJoint: the sample operation (its parameters checked here, the sample's at apply()).
  std::function<Result<std::shared_ptr<const JointOp>>(const Params&)> make_joint;
};

// A checked call of an operation.
struct OpCall {
  const OpSpec* op = nullptr;
  Params params;
};

// Every operation, by name.
const std::vector<OpSpec>& operations();

// The operation called `name`; kInvalidArgument listing the operations if there is none.
Result<const OpSpec*> find_operation(const std::string& name);

// `name` called with `given` (any subset of its parameters, typed or as text): kInvalidArgument
// naming the operation and the parameter that is unknown, repeated, of another type or out of
// bounds.
Result<OpCall> make_op_call(const std::string& name,
                            const std::vector<std::pair<std::string, ParamValue>>& given);

// A call as a command line writes it, "NAME" or "NAME:key=value,key=value" (a list of numbers
// in brackets, "[0.5,0.5]"; booleans true or false; a list of calls "[NAME:k=v;NAME]"), checked as
// make_op_call. Brackets nest at most kMaxOpNesting deep.
Result<OpCall> parse_op_call(const std::string& text);
inline constexpr int kMaxOpNesting = 8;
// A kOps value's calls: "[call;call]" (or "[]"), each parsed as parse_op_call and an operation
// of `role` (pixel, or kSource for a source_ops list); kInvalidArgument naming the call that is
// not.
Result<std::vector<OpCall>> parse_op_list(const std::string& text, OpRole role = OpRole::kPixel);

// `call` as text that parse_op_call reads back: every parameter, in the spec's order.
std::string to_text(const OpCall& call);

// The registry's description as JSON: [{"name", "role", "input", "output" ({"layout", "dtype",
// "variable"}), "doc", "python_class", "backend"
// ("pil", "tensor", "both"), "params":
// [{"name", "type", "default", "doc", "min", "max", "min_open", "min_count", "max_count",
// "choices"}]}], "min"/"max" null when unbounded, "choices" [] but for a kChoice.
std::string operations_json();

// `call`'s parameters as a JSON object {"name": value}.
std::string params_json(const OpCall& call);

const char* to_string(OpRole role);
const char* to_string(OpBackend backend);

}  // namespace stoker
