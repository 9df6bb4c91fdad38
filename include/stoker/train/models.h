#pragma once
// Models: one interface over the built-in zoo (mlp, cnn, resnet18) and TorchScript files, so the
// trainer, checkpoints and the doctor never care where a network came from.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// What a model is built for: one input sample's shape (C, H, W) and the number of classes.
struct ModelSpec {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t num_classes = 10;
};

// Live tensors by dot-separated name ("layer1.0.bn1.running_mean"), parameters then buffers.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// A trainable classifier taking float32 NCHW input and returning [N, num_classes] logits.
// Not thread-safe: use one Model from one thread at a time.
class Model {
 public:
  virtual ~Model() = default;

  // Runs the network on `input` (float32, NCHW, on the model's device).
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
  // "mlp", "cnn", "resnet18", or the TorchScript file's path.
  virtual std::string name() const = 0;

  // Writes the model to `path` crash-safely (temp file + rename): a TorchScript model as a
  // TorchScript file that Python's torch.jit.load reads, a built-in one as a torch::save archive.
  // The directory must exist.
  virtual Status save(const std::string& path) = 0;
  // Reads a file written by save() of the same architecture into the live tensors (parameter
  // identity is kept, so an optimizer built over parameters() stays valid).
  virtual Status load(const std::string& path) = 0;

  // Copies `state` into the live tensors of named_state(): every name must be present with the
  // same shape, and no name may be missing. Values are converted to each tensor's dtype/device.
  Status load_state(const NamedTensors& state);
};

// Builds a model: "mlp", "cnn" or "resnet18" for `spec`, or any path ending in ".pt" as a
// TorchScript module (spec unused; check it with check_output_shape). Parameters are on the CPU.
// Throws Error naming the problem: kNotFound for a missing TorchScript file, kInvalidArgument for
// an unknown name (listing the known ones), an invalid spec, or a file that is not TorchScript.
std::unique_ptr<Model> make_model(const std::string& name_or_path, const ModelSpec& spec);

// Runs a zero batch of 2 samples of `spec`'s shape (without gradients, in evaluation mode; the
// training flag is restored) and checks that the output is [2, num_classes]. The error names the
// model and both shapes.
Status check_output_shape(Model& model, const ModelSpec& spec);

}  // namespace stoker
