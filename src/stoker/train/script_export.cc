#include "stoker/train/script_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "stoker/train/models.h"

namespace stoker {
namespace {

namespace nn = torch::nn;

// `[a, b]`: an int[] literal in TorchScript.
std::string int_list(at::IntArrayRef values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

std::string bool_literal(bool b) { return b ? "True" : "False"; }

// The class name and forward source of `module`, or an empty class name for an unknown kind.
struct ScriptMethod {
  std::string class_name;
  std::string forward;
};

std::string forward_returning(const std::string& expression) {
  return "def forward(self, x: Tensor) -> Tensor:\n    return " + expression + "\n";
}

// Conv2d or Conv3d (D = 2, 3).
template <size_t D, typename Conv>
ScriptMethod conv(const Conv& conv) {
  const auto& o = conv.options;
  const auto* padding = std::get_if<torch::ExpandingArray<D>>(&o.padding());
  if (padding == nullptr || !std::get_if<torch::enumtype::kZeros>(&o.padding_mode()) ||
      o.transposed())
    return {};
  return {fmt::format("Conv{}d", D),
          forward_returning(fmt::format("torch.conv{}d(x, self.weight, {}, {}, {}, {}, {})", D,
                                        o.bias() ? "self.bias" : "None", int_list(*o.stride()),
                                        int_list(**padding), int_list(*o.dilation()), o.groups()))};
}

ScriptMethod batch_norm2d(const nn::BatchNorm2dImpl& bn) {
  const auto& o = bn.options;
  if (!o.affine() || !o.track_running_stats() || !o.momentum()) return {};
  // As nn::BatchNorm2d: batch statistics and a running-average update when training, the
  // running statistics otherwise.
  return {"BatchNorm2d",
          fmt::format("def forward(self, x: Tensor) -> Tensor:\n"
                      "    if self.training:\n"
                      "        self.num_batches_tracked.add_(1)\n"
                      "    return torch.batch_norm(x, self.weight, self.bias, self.running_mean, "
                      "self.running_var, self.training, {}, {}, True)\n",
                      *o.momentum(), o.eps())};
}

// MaxPool2d or MaxPool3d (D = 2, 3).
template <size_t D, typename Pool>
ScriptMethod max_pool(const Pool& pool) {
  const auto& o = pool.options;
  return {fmt::format("MaxPool{}d", D),
          forward_returning(fmt::format("torch.max_pool{}d(x, {}, {}, {}, {}, {})", D,
                                        int_list(*o.kernel_size()), int_list(*o.stride()),
                                        int_list(*o.padding()), int_list(*o.dilation()),
                                        bool_literal(o.ceil_mode())))};
}

// AdaptiveAvgPool2d or AdaptiveAvgPool3d (D = 2, 3).
template <size_t D, typename Pool>
ScriptMethod adaptive_avg_pool(const Pool& pool) {
  std::vector<int64_t> size;
  for (const std::optional<int64_t>& s : *pool.options.output_size()) {
    if (!s) return {};  // "keep the input's size": not written
    size.push_back(*s);
  }
  return {fmt::format("AdaptiveAvgPool{}d", D),
          forward_returning(fmt::format("torch.adaptive_avg_pool{}d(x, {})", D, int_list(size)))};
}

ScriptMethod sequential(const nn::Module& module) {
  std::string source = "def forward(self, x: Tensor) -> Tensor:\n";
  for (const auto& child : module.named_children())
    source += "    x = " + script_attribute(child.key()) + ".forward(x)\n";
  return {"Sequential", source + "    return x\n"};
}

ScriptMethod script_method(const nn::Module& m) {
  if (const auto* s = dynamic_cast<const ScriptableModule*>(&m))
    return {s->script_class(), s->script_forward()};
  if (const auto* linear = dynamic_cast<const nn::LinearImpl*>(&m)) {
    return {"Linear",
            forward_returning(fmt::format("torch.linear(x, self.weight, {})",
                                          linear->options.bias() ? "self.bias" : "None"))};
  }
  if (const auto* c = dynamic_cast<const nn::Conv2dImpl*>(&m)) return conv<2>(*c);
  if (const auto* c = dynamic_cast<const nn::Conv3dImpl*>(&m)) return conv<3>(*c);
  if (const auto* bn = dynamic_cast<const nn::BatchNorm2dImpl*>(&m)) return batch_norm2d(*bn);
  if (dynamic_cast<const nn::ReLUImpl*>(&m)) return {"ReLU", forward_returning("torch.relu(x)")};
  if (const auto* pool = dynamic_cast<const nn::MaxPool2dImpl*>(&m)) return max_pool<2>(*pool);
  if (const auto* pool = dynamic_cast<const nn::MaxPool3dImpl*>(&m)) return max_pool<3>(*pool);
  if (const auto* pool = dynamic_cast<const nn::AdaptiveAvgPool2dImpl*>(&m))
    return adaptive_avg_pool<2>(*pool);
  if (const auto* pool = dynamic_cast<const nn::AdaptiveAvgPool3dImpl*>(&m))
    return adaptive_avg_pool<3>(*pool);
  if (const auto* flatten = dynamic_cast<const nn::FlattenImpl*>(&m)) {
    return {"Flatten",
            forward_returning(fmt::format("torch.flatten(x, {}, {})", flatten->options.start_dim(),
                                          flatten->options.end_dim()))};
  }
  if (dynamic_cast<const nn::SequentialImpl*>(&m)) return sequential(m);
  return {};
}

// A copy of `t` on the CPU that keeps its requires_grad, for the script module to own.
at::Tensor cpu_copy(const at::Tensor& t) {
  return t.detach()
      .to(at::kCPU, /*non_blocking=*/false, /*copy=*/true)
      .requires_grad_(t.requires_grad());
}

torch::jit::Module convert(const nn::Module& module, const std::string& class_name,
                           const std::string& path,
                           const std::shared_ptr<torch::jit::CompilationUnit>& unit) {
  ScriptMethod method = script_method(module);
  if (method.class_name.empty()) {
    throw Error(unsupported("cannot write module '" + (path.empty() ? class_name : path) + "' (" +
                            module.name() + ") as TorchScript"));
  }
  torch::jit::Module out(c10::QualifiedName("__torch__.stoker." +
                                            (class_name.empty() ? method.class_name : class_name)),
                         unit, /*shouldMangle=*/true);
  out.register_attribute("training", c10::BoolType::get(), module.is_training());
  for (const auto& p : module.named_parameters(/*recurse=*/false))
    out.register_parameter(p.key(), cpu_copy(p.value()), /*is_buffer=*/false);
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    out.register_buffer(b.key(), cpu_copy(b.value()));
  for (const auto& child : module.named_children()) {
    out.register_module(
        child.key(),
        convert(*child.value(), "", path.empty() ? child.key() : path + "." + child.key(), unit));
  }
  out.define(method.forward);
  return out;
}

}  // namespace

std::string script_attribute(const std::string& name) {
  const bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                          std::all_of(name.begin(), name.end(), [](char c) {
                            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                          });
  return identifier ? "self." + name : "getattr(self, \"" + name + "\")";
}

Result<torch::jit::Module> to_script_module(const nn::Module& module,
                                            const std::string& class_name) {
  try {
    return convert(module, class_name, "", std::make_shared<torch::jit::CompilationUnit>());
  } catch (const Error& e) {
    return e.status();
  } catch (const std::exception& e) {  // c10::Error, or TorchScript's ErrorReport
    return Status(StatusCode::kInternal,
                  "cannot write model " + class_name + " as TorchScript: " + exception_reason(e));
  }
}

}  // namespace stoker
