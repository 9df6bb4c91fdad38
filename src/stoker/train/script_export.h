#pragma once
// A LibTorch nn::Module (a built-in model) as a TorchScript module that Python's torch.jit.load
// runs: the same tree of submodules under the same names, with the same parameters and buffers,
// and a `forward` in TorchScript for each. Since the names match, torch::load reads the weights
// of such a file back into the nn::Module as it reads a torch::save archive of it.

#include <torch/nn/module.h>
#include <torch/script.h>

#include <string>

#include "stoker/util/status.h"

namespace stoker {

// Implemented by stoker's own nn modules (the ResNet blocks), which to_script_module cannot know:
// what their forward is in TorchScript.
class ScriptableModule {
 public:
  virtual ~ScriptableModule() = default;
  // The TorchScript class name of the module (an identifier, e.g. "BasicBlock").
  virtual std::string script_class() const = 0;
  // The source of `def forward(self, x: Tensor) -> Tensor:` computing what the module's forward
  // does, reading submodules, parameters and buffers by their registered names
  // (script_attribute() for names that are not identifiers, such as "0").
  virtual std::string script_forward() const = 0;
};

// `self.NAME` in TorchScript source, or `getattr(self, "NAME")` when NAME is not an identifier.
std::string script_attribute(const std::string& name);

// A TorchScript module computing what `module` computes, of class `__torch__.stoker.CLASS`
// (`class_name` for the root; submodules get their kind's name, mangled by TorchScript where
// kinds repeat): every submodule, parameter and buffer under its name, the tensors copied to
// the CPU (requires_grad kept), and a `training` flag equal to `module`'s. Knows Linear, Conv2d
// and Conv3d (zero padding), BatchNorm2d (affine, tracking running statistics), ReLU, MaxPool2d
// and 3d, AdaptiveAvgPool2d and 3d, Flatten, Sequential and ScriptableModule. kUnsupported naming a
// module of another kind (or options it cannot write), kInternal if TorchScript rejects a forward.
Result<torch::jit::Module> to_script_module(const torch::nn::Module& module,
                                            const std::string& class_name);

}  // namespace stoker
