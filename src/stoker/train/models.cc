#include "stoker/train/models.h"

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <sstream>

#include "stoker/train/script_export.h"
#include "stoker/train/torch_archive.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/regular_file.h"

namespace stoker {
namespace {

namespace nn = torch::nn;

std::string shape_string(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << ']';
  return out.str();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ResNet basic block: two 3x3 conv+BN, plus a 1x1 conv+BN projection when the shape changes.
struct BasicBlockImpl : nn::Module, ScriptableModule {
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride)
      : conv1(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)),
        bn1(out),
        conv2(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)),
        bn2(out) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    if (stride != 1 || in != out) {
      shortcut =
          nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
                         nn::BatchNorm2d(out));
      register_module("shortcut", shortcut);
    }
  }

  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = torch::relu(bn1(conv1(x)));
    y = bn2(conv2(y));
    return torch::relu(y + (shortcut ? shortcut->forward(x) : x));
  }

  std::string script_class() const override { return "BasicBlock"; }
  std::string script_forward() const override {
    return std::string("def forward(self, x: Tensor) -> Tensor:\n") +
           "    y = torch.relu(self.bn1.forward(self.conv1.forward(x)))\n" +
           "    y = self.bn2.forward(self.conv2.forward(y))\n" + "    return torch.relu(y + " +
           (shortcut ? "self.shortcut.forward(x)" : "x") + ")\n";
  }

  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(BasicBlock);

// A ResNet stage: two BasicBlocks named "0" and "1" (the first may downsample).
struct StageImpl : nn::Module, ScriptableModule {
  StageImpl(int64_t in, int64_t out, int64_t stride)
      : block0(register_module("0", BasicBlock(in, out, stride))),
        block1(register_module("1", BasicBlock(out, out, 1))) {}

  at::Tensor forward(const at::Tensor& x) { return block1(block0(x)); }

  std::string script_class() const override { return "Stage"; }
  std::string script_forward() const override {
    return "def forward(self, x: Tensor) -> Tensor:\n    return " + script_attribute("1") +
           ".forward(" + script_attribute("0") + ".forward(x))\n";
  }

  BasicBlock block0;
  BasicBlock block1;
};
TORCH_MODULE(Stage);

// Layer widths of the mlp and the cnn, shared by their builders and builtin_parameter_count.
constexpr int64_t kMlpHidden1 = 128;
constexpr int64_t kMlpHidden2 = 64;
constexpr int64_t kCnnConv1 = 32;
constexpr int64_t kCnnConv2 = 64;
constexpr int64_t kCnnKernel = 3;
constexpr int64_t kCnnHidden = 128;

// Inputs of the cnn's first linear layer: conv2's channels after two 2x2 poolings (in double, for
// builtin_parameter_count: a huge input's count overflows int64).
double cnn_features(const ModelSpec& s) {
  return static_cast<double>(kCnnConv2) * (s.height / 4) * (s.width / 4);
}

nn::Sequential make_mlp(const ModelSpec& s) {
  return nn::Sequential({{"flatten", nn::Flatten()},
                         {"fc1", nn::Linear(s.channels * s.height * s.width, kMlpHidden1)},
                         {"relu1", nn::ReLU()},
                         {"fc2", nn::Linear(kMlpHidden1, kMlpHidden2)},
                         {"relu2", nn::ReLU()},
                         {"fc3", nn::Linear(kMlpHidden2, s.num_classes)}});
}

nn::Sequential make_cnn(const ModelSpec& s) {
  const auto conv = [](int64_t in, int64_t out) {
    return nn::Conv2d(nn::Conv2dOptions(in, out, kCnnKernel).padding(kCnnKernel / 2));
  };
  return nn::Sequential({{"conv1", conv(s.channels, kCnnConv1)},
                         {"relu1", nn::ReLU()},
                         {"pool1", nn::MaxPool2d(2)},
                         {"conv2", conv(kCnnConv1, kCnnConv2)},
                         {"relu2", nn::ReLU()},
                         {"pool2", nn::MaxPool2d(2)},
                         {"flatten", nn::Flatten()},
                         {"fc1", nn::Linear(static_cast<int64_t>(cnn_features(s)), kCnnHidden)},
                         {"relu3", nn::ReLU()},
                         {"fc2", nn::Linear(kCnnHidden, s.num_classes)}});
}

// Channels of video_cnn's two 3x3x3 convolutions.
constexpr int64_t kVideoConv1 = 16;
constexpr int64_t kVideoConv2 = 32;

// A small 3-D CNN for clips [N, C, T, H, W]: two 3x3x3 convolutions (the first followed by a
// spatial 2x2 max-pool), global average pooling and a linear classifier; any clip size.
nn::Sequential make_video_cnn(const ModelSpec& s) {
  const auto conv = [](int64_t in, int64_t out) {
    return nn::Conv3d(nn::Conv3dOptions(in, out, kCnnKernel).padding(kCnnKernel / 2));
  };
  return nn::Sequential({{"conv1", conv(s.channels, kVideoConv1)},
                         {"relu1", nn::ReLU()},
                         {"pool1", nn::MaxPool3d(nn::MaxPool3dOptions({1, 2, 2}))},
                         {"conv2", conv(kVideoConv1, kVideoConv2)},
                         {"relu2", nn::ReLU()},
                         {"pool2", nn::AdaptiveAvgPool3d(1)},
                         {"flatten", nn::Flatten()},
                         {"fc", nn::Linear(kVideoConv2, s.num_classes)}});
}

// Inputs larger than this get ResNet's ImageNet stem; smaller ones the CIFAR stem.
constexpr int64_t kLargestSmallImage = 64;

// ResNet-18, BasicBlocks [2, 2, 2, 2]. Its stem depends on the input: for images larger than
// 64 px torchvision's (7x7 stride-2 convolution, 3x3 stride-2 max-pool: a 224 px input reaches
// the first stage at 56 px), for small ones (28, 32, 64 px) the CIFAR-style 3x3 stride-1 stem
// without max-pool, which keeps their few pixels.
nn::Sequential make_resnet18(const ModelSpec& s) {
  nn::Sequential net;
  const bool large = std::min(s.height, s.width) > kLargestSmallImage;
  net->push_back(
      "conv1",
      nn::Conv2d(large ? nn::Conv2dOptions(s.channels, 64, 7).stride(2).padding(3).bias(false)
                       : nn::Conv2dOptions(s.channels, 64, 3).padding(1).bias(false)));
  net->push_back("bn1", nn::BatchNorm2d(64));
  net->push_back("relu", nn::ReLU());
  if (large) net->push_back("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  int64_t in = 64;
  const int64_t widths[] = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t out = widths[layer];
    net->push_back("layer" + std::to_string(layer + 1), Stage(in, out, layer == 0 ? 1 : 2));
    in = out;
  }
  net->push_back("avgpool", nn::AdaptiveAvgPool2d(1));
  net->push_back("flatten", nn::Flatten());
  net->push_back("fc", nn::Linear(512, s.num_classes));
  return net;
}

NamedTensors named_module_state(const nn::Module& module) {
  NamedTensors state;
  for (const auto& p : module.named_parameters()) state.emplace_back(p.key(), p.value());
  for (const auto& b : module.named_buffers()) state.emplace_back(b.key(), b.value());
  return state;
}

// Writes `module` as a TorchScript file at `path` crash-safely; kIoError naming `what` if that
// fails.
Status save_script_module(const torch::jit::Module& module, const std::string& path,
                          const std::string& what) {
  std::ostringstream bytes;
  try {
    module.save(bytes);
  } catch (const c10::Error& e) {
    return io_error("cannot serialize " + what + ": " + short_message(e));
  }
  return write_file_atomically(path, bytes.str());
}

// The method a saved built-in model has beside forward: uint8 images as stored (or clips
// [N, C, T, H, W]) to logits, the mean and std over the channels, dimension 1.
constexpr const char* kPredictSource = R"(
def predict(self, images: Tensor) -> Tensor:
    shape = [1, -1] + [1] * (images.dim() - 2)
    scale = torch.reciprocal(self.input_std * 255.0).view(shape)
    shift = (self.input_mean / self.input_std).view(shape)
    return self.forward(images.float() * scale - shift)
)";

class BuiltinModel final : public Model {
 public:
  BuiltinModel(std::string name, const ModelSpec& spec, nn::Sequential net)
      : name_(std::move(name)), spec_(spec), net_(std::move(net)) {}

  at::Tensor forward(const at::Tensor& input) override { return net_->forward(input); }
  std::vector<at::Tensor> parameters() override { return net_->parameters(); }
  NamedTensors named_state() override { return named_module_state(*net_); }
  void train(bool on) override { net_->train(on); }
  bool is_training() const override { return net_->is_training(); }
  void to(const c10::Device& device) override { net_->to(device); }
  std::string name() const override { return name_; }

  Status save(const std::string& path, const InputNormalization& input) override {
    const auto channels = static_cast<size_t>(spec_.channels);
    if (input.mean.size() != input.std.size() ||
        (input.mean.size() != 1 && input.mean.size() != channels)) {
      return invalid_argument(fmt::format(
          "model {} takes {} input channels: its input mean and std need one value each or one "
          "per channel, not {} and {}",
          name_, channels, input.mean.size(), input.std.size()));
    }
    STOKER_ASSIGN_OR_RETURN(torch::jit::Module script, to_script_module(*net_, name_));
    const auto per_channel = [&](const std::vector<float>& values) {
      return torch::tensor(values, torch::kFloat32).expand({spec_.channels}).clone();
    };
    try {
      script.register_buffer("input_mean", per_channel(input.mean));
      script.register_buffer("input_std", per_channel(input.std));
      script.define(kPredictSource);
    } catch (const std::exception& e) {  // c10::Error, or TorchScript's ErrorReport
      return Status(StatusCode::kInternal,
                    "cannot write model " + name_ + " as TorchScript: " + exception_reason(e));
    }
    script.eval();
    return save_script_module(script, path, "model " + name_ + " to " + path);
  }

  Status save_state(const std::string& path) override {
    return save_archive(net_, path, "model " + name_);
  }

  Status load(const std::string& path) override {
    return load_archive(net_, path, name_ + " weights");
  }

 private:
  std::string name_;
  ModelSpec spec_;
  nn::Sequential net_;
};

NamedTensors named_script_state(const torch::jit::Module& module) {
  NamedTensors state;
  for (const auto& p : module.named_parameters()) state.emplace_back(p.name, p.value);
  for (const auto& b : module.named_buffers()) state.emplace_back(b.name, b.value);
  return state;
}

class ScriptModel final : public Model {
 public:
  ScriptModel(std::string path, torch::jit::Module module)
      : path_(std::move(path)), module_(std::move(module)) {}

  at::Tensor forward(const at::Tensor& input) override {
    const c10::IValue out = module_.forward({input});
    if (out.isTuple()) {
      const auto& elements = out.toTupleRef().elements();
      if (!elements.empty() && elements[0].isTensor()) return elements[0].toTensor();
    }
    if (!out.isTensor()) {
      throw Error(invalid_argument("returns a " + std::string(out.tagKind()) +
                                   ", not a tensor of logits or a tuple whose first element is "
                                   "one"));
    }
    return out.toTensor();
  }
  std::vector<at::Tensor> parameters() override {
    std::vector<at::Tensor> params;
    for (const at::Tensor& p : module_.parameters()) params.push_back(p);
    return params;
  }
  NamedTensors named_state() override { return named_script_state(module_); }
  void train(bool on) override { module_.train(on); }
  bool is_training() const override { return module_.is_training(); }
  void to(const c10::Device& device) override { module_.to(device); }
  std::string name() const override { return path_; }

  Status save(const std::string& path, const InputNormalization&) override {
    const bool was_training = module_.is_training();
    module_.eval();
    Status saved = save_state(path);
    module_.train(was_training);
    return saved;
  }

  Status save_state(const std::string& path) override {
    return save_script_module(module_, path, "TorchScript model " + path_);
  }

  Status load(const std::string& path) override {
    torch::jit::Module loaded;
    try {
      loaded = torch::jit::load(path, c10::Device(c10::kCPU));
    } catch (const c10::Error& e) {
      return corrupt("cannot load TorchScript model '" + path + "': " + short_message(e));
    }
    return load_state(named_script_state(loaded));
  }

 private:
  std::string path_;
  torch::jit::Module module_;
};

// What a .pt file that is not TorchScript is, if it is another file of torch.save: "" if not.
std::string other_torch_file(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    bool code = false;
    for (const std::string& record : reader.getAllRecords()) code |= record.rfind("code/", 0) == 0;
    if (!code && reader.hasRecord("data.pkl")) {
      return "it is a torch.save() archive (a state_dict or a pickled module)";
    }
  } catch (const c10::Error&) {
    // Not a zip archive: torch.save's legacy format is a pickle that starts with a magic number.
    constexpr char kLegacyMagic[] = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
    std::string head(sizeof(kLegacyMagic) - 1, '\0');
    std::ifstream(path, std::ios::binary)
        .read(head.data(), static_cast<std::streamsize>(head.size()));
    if (head == std::string(kLegacyMagic, sizeof(kLegacyMagic) - 1)) {
      return "it is a torch.save() pickle (a state_dict or a pickled module)";
    }
  }
  return "";
}

// When the model's first parameter is a layer that takes another number of channels (a
// convolution's [out, in, kh, kw] weight) or of input values (a linear layer's [out, in]) than
// the samples of `spec` have: one line saying so. "" otherwise.
std::string first_layer_mismatch(Model& model, const ModelSpec& spec) {
  const NamedTensors state = model.named_state();
  if (model.parameters().empty() || state.empty()) return "";
  const auto& [name, weight] = state.front();
  const std::vector<int64_t> shape = sample_shape(spec);
  const std::string data = fmt::format("the data's samples are {}", shape_string(shape));
  if ((weight.dim() == 4 || weight.dim() == 5) && weight.size(1) != spec.channels) {
    return fmt::format("model {} expects input with {} channels (its first layer '{}' is {}); {}",
                       model.name(), weight.size(1), name, shape_string(weight.sizes()), data);
  }
  const int64_t values =
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  if (weight.dim() == 2 && weight.size(1) != values) {
    return fmt::format(
        "model {} expects {} input values per sample (its first layer '{}' is {}); {}: {} values",
        model.name(), weight.size(1), name, shape_string(weight.sizes()), data, values);
  }
  return "";
}

}  // namespace

std::string exception_reason(const std::exception& e, bool verbose) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  text.erase(0, text.find_first_not_of('\n'));  // TorchScript's compile errors start with one
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (verbose) return text;
  constexpr const char* kInterpreter = "The following operation failed in the TorchScript";
  if (text.rfind(kInterpreter, 0) == 0 && text.find('\n') != std::string::npos)
    return text.substr(text.rfind('\n') + 1);  // the error under the traceback
  return text.substr(0, text.find('\n'));
}

Result<at::Tensor> run_model(Model& model, const at::Tensor& input, int64_t num_classes,
                             bool verbose) {
  at::Tensor output;
  try {
    output = model.forward(input);
  } catch (const Error& e) {
    return invalid_argument("model " + model.name() + " " + e.what());
  } catch (const std::exception& e) {
    return invalid_argument("model " + model.name() + " failed: " + exception_reason(e, verbose));
  }
  if (!at::isFloatingType(output.scalar_type())) {
    return invalid_argument(fmt::format("model {} returns {} logits; they must be floating point",
                                        model.name(), c10::toString(output.scalar_type())));
  }
  const int64_t n = input.size(0);
  if (output.dim() >= 1 && output.size(0) != n) {
    return invalid_argument(fmt::format(
        "model {} returns {} rows of logits for a batch of {} samples (input {}, output {})",
        model.name(), output.size(0), n, shape_string(input.sizes()),
        shape_string(output.sizes())));
  }
  if (output.sizes() != at::IntArrayRef({n, num_classes})) {
    return invalid_argument(fmt::format(
        "model {} maps input {} to output {}, expected {}", model.name(),
        shape_string(input.sizes()), shape_string(output.sizes()), shape_string({n, num_classes})));
  }
  return output;
}

std::vector<int64_t> sample_shape(const ModelSpec& spec) {
  if (spec.frames > 0) return {spec.channels, spec.frames, spec.height, spec.width};
  return {spec.channels, spec.height, spec.width};
}

double builtin_parameter_count(const std::string& name, const ModelSpec& s) {
  // In double: a huge input's count overflows int64 (and is refused for its size anyway).
  const auto linear = [](double in, double out) { return in * out + out; };
  const auto conv = [](double in, double out) { return in * out * kCnnKernel * kCnnKernel + out; };
  const double classes = static_cast<double>(s.num_classes);
  if (name == "video_cnn") {
    const auto conv3d = [](double in, double out) {
      return in * out * kCnnKernel * kCnnKernel * kCnnKernel + out;
    };
    return conv3d(static_cast<double>(s.channels), kVideoConv1) + conv3d(kVideoConv1, kVideoConv2) +
           linear(kVideoConv2, classes);
  }
  if (name == "mlp") {
    return linear(static_cast<double>(s.channels) * s.height * s.width, kMlpHidden1) +
           linear(kMlpHidden1, kMlpHidden2) + linear(kMlpHidden2, classes);
  }
  if (name == "cnn") {
    return conv(static_cast<double>(s.channels), kCnnConv1) + conv(kCnnConv1, kCnnConv2) +
           linear(cnn_features(s), kCnnHidden) + linear(kCnnHidden, classes);
  }
  if (name == "resnet18") {
    // Its size does not grow with the input's height and width: build it and count.
    double n = 0;
    for (const at::Tensor& p : make_resnet18(s)->parameters()) n += static_cast<double>(p.numel());
    return n;
  }
  return -1;
}

Status Model::load_state(const NamedTensors& state) {
  std::map<std::string, at::Tensor> live;
  for (auto& [key, tensor] : named_state()) live.emplace(key, tensor);
  if (state.size() != live.size()) {
    return invalid_argument("model " + name() + " has " + std::to_string(live.size()) +
                            " state tensors, the saved state has " + std::to_string(state.size()));
  }
  torch::NoGradGuard no_grad;
  for (const auto& [key, value] : state) {
    auto it = live.find(key);
    if (it == live.end())
      return invalid_argument("model " + name() + " has no tensor '" + key + "'");
    if (it->second.sizes() != value.sizes()) {
      return invalid_argument("model " + name() + " tensor '" + key + "' has shape " +
                              shape_string(it->second.sizes()) + ", the saved one " +
                              shape_string(value.sizes()));
    }
    it->second.copy_(value);
  }
  return Status::ok();
}

std::unique_ptr<Model> make_model(const std::string& name_or_path, const ModelSpec& spec) {
  if (ends_with(name_or_path, ".pt")) {
    // A directory or a FIFO named like a model is said to be one, without blocking on it.
    const Result<RegularFile> file = RegularFile::open(name_or_path);
    if (file.status().code() == StatusCode::kNotFound)
      throw Error(not_found("TorchScript model '" + name_or_path + "' does not exist"));
    if (!file.is_ok())
      throw Error(Status(file.status().code(), "TorchScript model " + file.status().message()));
    try {
      return std::make_unique<ScriptModel>(name_or_path, torch::jit::load(name_or_path));
    } catch (const c10::Error& e) {
      const std::string other = other_torch_file(name_or_path);
      throw Error(
          invalid_argument("cannot load TorchScript model '" + name_or_path + "': " +
                           (other.empty() ? short_message(e)
                                          : other + ", not TorchScript; save the model with "
                                                    "torch.jit.script(model).save(path)")));
    }
  }
  if (spec.channels <= 0 || spec.height <= 0 || spec.width <= 0 || spec.num_classes <= 0 ||
      spec.frames < 0) {
    throw Error(invalid_argument("model " + name_or_path + ": input shape " +
                                 shape_string(sample_shape(spec)) + " and num_classes " +
                                 std::to_string(spec.num_classes) + " must be positive"));
  }
  const bool video = name_or_path == "video_cnn";
  if ((spec.frames > 0) != video &&
      std::count(builtin_model_names().begin(), builtin_model_names().end(), name_or_path) > 0) {
    throw Error(
        invalid_argument(video ? "model video_cnn takes clips [C, T, H, W]; the data are images " +
                                     shape_string(sample_shape(spec))
                               : "model " + name_or_path + " takes images; the data are clips " +
                                     shape_string(sample_shape(spec)) + ": use --model video_cnn"));
  }
  if (video) return std::make_unique<BuiltinModel>("video_cnn", spec, make_video_cnn(spec));
  if (name_or_path == "mlp") return std::make_unique<BuiltinModel>("mlp", spec, make_mlp(spec));
  if (name_or_path == "cnn") {
    if (spec.height < 4 || spec.width < 4) {
      throw Error(invalid_argument("model cnn needs inputs of at least 4x4, got " +
                                   std::to_string(spec.height) + "x" + std::to_string(spec.width)));
    }
    return std::make_unique<BuiltinModel>("cnn", spec, make_cnn(spec));
  }
  if (name_or_path == "resnet18") {
    return std::make_unique<BuiltinModel>("resnet18", spec, make_resnet18(spec));
  }
  throw Error(invalid_argument(
      fmt::format("unknown model '{}': known models are {}, or a TorchScript file ending in .pt",
                  name_or_path, fmt::join(builtin_model_names(), ", "))));
}

const std::vector<std::string>& builtin_model_names() {
  static const std::vector<std::string> names = {"mlp", "cnn", "resnet18", "video_cnn"};
  return names;
}

Status check_output_shape(Model& model, const ModelSpec& spec, bool verbose) {
  std::vector<at::Tensor> params = model.parameters();
  auto options = torch::TensorOptions().dtype(torch::kFloat32);
  if (!params.empty()) options = options.device(params.front().device());

  const bool was_training = model.is_training();
  model.train(false);
  Status status;
  {
    torch::NoGradGuard no_grad;
    std::vector<int64_t> shape = sample_shape(spec);
    shape.insert(shape.begin(), 2);
    status = run_model(model, torch::zeros(shape, options), spec.num_classes, verbose).status();
  }
  model.train(was_training);
  if (status.is_ok() || verbose) return status;
  const std::string mismatch = first_layer_mismatch(model, spec);
  return mismatch.empty() ? status : invalid_argument(mismatch);
}

}  // namespace stoker
