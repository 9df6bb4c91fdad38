#pragma once
// Models: one interface over the built-in zoo (mlp, cnn, resnet18) and TorchScript files, so the
// trainer, checkpoints and the doctor never care where a network came from.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// What a model is built for: one input sample's shape (C, H, W; a clip's C, T, H, W where
// `frames` > 0) and the number of classes.
struct ModelSpec {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t num_classes = 10;
  int64_t frames = 0;  // T: 0 for an image
};

// One sample's shape: [C, H, W], or [C, T, H, W] for a clip.
std::vector<int64_t> sample_shape(const ModelSpec& spec);

// How the trainer turns stored uint8 images into a model's input: (x / 255 - mean[c]) / std[c]
// per channel c; one value serves every channel.
struct InputNormalization {
  std::vector<float> mean;
  std::vector<float> std;
};

// Live tensors by dot-separated name ("layer1.0.bn1.running_mean"), parameters then buffers.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// A trainable classifier taking float32 NCHW input (NCTHW for a video model) and returning [N,
// num_classes] logits (a TorchScript model may return a tuple whose first element is the logits).
// Not thread-safe: use one Model from one thread at a time.
class Model {
 public:
  virtual ~Model() = default;

  // Runs the network on `input` (float32, NCHW, on the model's device). Whatever the network
  // raises propagates (c10::Error, std::exception); run_model() turns it into a Status.
  virtual at::Tensor forward(const at::Tensor& input) = 0;
  // The trainable parameters: handles to the live tensors, valid while the Model lives.
  virtual std::vector<at::Tensor> parameters() = 0;
  // Parameters and buffers (e.g. BatchNorm running statistics) by name; handles to the live
  // tensors, so writing into them changes the model.
  virtual NamedTensors named_state() = 0;
  // Switches between training (true) and evaluation (false) behaviour (BatchNorm, Dropout).
  virtual void train(bool on) = 0;
  virtual bool is_training() const = 0;
  // Moves parameters and buffers to `device` in place.
  virtual void to(const c10::Device& device) = 0;
  // "mlp", "cnn", "resnet18", "video_cnn", or the TorchScript file's path.
  virtual std::string name() const = 0;

  // Writes the model to `path` crash-safely (temp file + rename; the directory must exist) as a
  // TorchScript file that Python runs: `torch.jit.load(path)(x)` on float NCHW input (NCTHW
  // clips) normalised as `input` says, in evaluation mode (the live model's mode is kept). A
  // TorchScript model is written with its own code (`input` unused). A built-in one has its
  // parameters and buffers under their named_state() names, and also holds `input`: buffers
  // input_mean and input_std (float32 [C]) and a method predict(images) that takes uint8 [N, C, H,
  // W] images as stored (a video model: uint8 clips [N, C, T, H, W]), normalises them and returns
  // forward's logits. kInvalidArgument if `input` has neither 1 nor C values each, kIoError if the
  // file cannot be written.
  virtual Status save(const std::string& path, const InputNormalization& input) = 0;
  // Writes the model's state to `path` for a checkpoint, crash-safely: a TorchScript model as a
  // TorchScript file, a built-in one as a torch::save archive of its modules.
  virtual Status save_state(const std::string& path) = 0;
  // Reads a file written by save() or save_state() of the same architecture into the live
  // tensors (parameter identity is kept, so an optimizer built over parameters() stays valid).
  virtual Status load(const std::string& path) = 0;

  // Copies `state` into the live tensors of named_state(): every name must be present with the
  // same shape, and no name may be missing. Values are converted to each tensor's dtype/device.
  Status load_state(const NamedTensors& state);
};

// Builds a model: a built-in one (builtin_model_names) for `spec`, or any path ending in ".pt" as a
// TorchScript module (spec unused; check it with check_output_shape). Parameters are on the CPU.
// Throws Error naming the problem: kNotFound for a missing TorchScript file, kInvalidArgument for
// an unknown name (listing the known ones), an invalid spec (an image model for clips, or
// video_cnn for images), or a file that is not TorchScript.
std::unique_ptr<Model> make_model(const std::string& name_or_path, const ModelSpec& spec);

// The built-in models' names, as make_model and --model take them: mlp, cnn, resnet18 (images),
// video_cnn (clips: a spec with frames).
const std::vector<std::string>& builtin_model_names();

// The trainable parameters make_model(name, spec) builds for a built-in `name`, computed
// without allocating them (in double: a huge input's count does not fit in int64); -1 for any
// other name (a TorchScript file's size is known once it is loaded).
double builtin_parameter_count(const std::string& name, const ModelSpec& spec);

// The reason an exception from LibTorch or a TorchScript model gives, in one line: the first
// line of its message, or for an error raised in the TorchScript interpreter the error at the
// end of its traceback. With `verbose`, the whole message (the traceback included).
std::string exception_reason(const std::exception& e, bool verbose = false);

// Runs `model` on `input` (a batch of N samples) and returns its logits, checked to be a
// floating-point [N, num_classes] tensor. kInvalidArgument naming the model and the reason
// (exception_reason of what forward raised, or the output's type, dtype or shape) otherwise.
Result<at::Tensor> run_model(Model& model, const at::Tensor& input, int64_t num_classes,
                             bool verbose = false);

// run_model on a zero batch of 2 samples of `spec`'s shape (without gradients, in evaluation
// mode; the training flag is restored). The error names the model and both shapes; when the
// model's first layer takes another number of channels or features than the data has, it says
// that instead of LibTorch's message.
Status check_output_shape(Model& model, const ModelSpec& spec, bool verbose = false);

}  // namespace stoker
