#include "stoker/train/models.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/nn/functional/loss.h>
#include <torch/script.h>
#include <torch/types.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stoker/testing/script_models.h"
#include "stoker/train/optimizers.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

ModelSpec spec_of(int64_t c, int64_t h, int64_t w, int64_t classes) {
  ModelSpec spec;
  spec.channels = c;
  spec.height = h;
  spec.width = w;
  spec.num_classes = classes;
  return spec;
}

int64_t parameter_count(Model& model) {
  int64_t n = 0;
  for (const at::Tensor& p : model.parameters()) n += p.numel();
  return n;
}

// The live state tensor called `name`, or an undefined tensor.
at::Tensor state_tensor(Model& model, const std::string& name) {
  for (const auto& [key, tensor] : model.named_state()) {
    if (key == name) return tensor;
  }
  return {};
}

bool has_state(Model& model, const std::string& name) {
  return state_tensor(model, name).defined();
}

// The message of the Error that make_model throws, or "" if it does not throw.
std::string make_model_error(const std::string& name, const ModelSpec& spec) {
  try {
    make_model(name, spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "stoker_models_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

TEST(MakeModelTest, MlpIsFlatten784To128To64ToClasses) {
  auto model = make_model("mlp", spec_of(1, 28, 28, 10));
  EXPECT_EQ(model->name(), "mlp");
  EXPECT_EQ(parameter_count(*model), 784 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10);
  EXPECT_TRUE(check_output_shape(*model, spec_of(1, 28, 28, 10)).is_ok());
  EXPECT_EQ(model->forward(torch::rand({5, 1, 28, 28})).sizes(), at::IntArrayRef({5, 10}));
}

TEST(MakeModelTest, CnnFitsInputShape) {
  auto model = make_model("cnn", spec_of(3, 32, 32, 7));
  EXPECT_EQ(model->name(), "cnn");
  EXPECT_TRUE(check_output_shape(*model, spec_of(3, 32, 32, 7)).is_ok());
  EXPECT_TRUE(has_state(*model, "conv2.weight"));
  EXPECT_TRUE(has_state(*model, "fc1.weight"));
  EXPECT_NE(make_model_error("cnn", spec_of(1, 2, 2, 10)).find("4x4"), std::string::npos);
}

// video_cnn takes clips [N, C, T, H, W] of any size; its parameters are counted without
// building it; image models refuse clips and it refuses images, each naming the data's shape;
// its state round-trips, and it saves as TorchScript (video_training_test runs the file).
TEST(MakeModelTest, VideoCnnTakesClips) {
  ModelSpec spec = spec_of(3, 16, 16, 5);
  spec.frames = 4;
  auto model = make_model("video_cnn", spec);
  EXPECT_EQ(model->name(), "video_cnn");
  EXPECT_TRUE(check_output_shape(*model, spec).is_ok());
  EXPECT_EQ(model->forward(torch::rand({2, 3, 6, 24, 20})).sizes(), at::IntArrayRef({2, 5}));
  EXPECT_EQ(builtin_parameter_count("video_cnn", spec),
            static_cast<double>(parameter_count(*model)));
  EXPECT_EQ(state_tensor(*model, "conv1.weight").dim(), 5);
  EXPECT_NE(make_model_error("cnn", spec).find("the data are clips [3, 4, 16, 16]"),
            std::string::npos);
  EXPECT_NE(make_model_error("video_cnn", spec_of(3, 16, 16, 5)).find("the data are images"),
            std::string::npos);
  TempDir dir;
  EXPECT_TRUE(model->save_state(dir / "state.pt").is_ok());
  EXPECT_TRUE(make_model("video_cnn", spec)->load(dir / "state.pt").is_ok());
  EXPECT_TRUE(model->save(dir / "model.pt", {{0.5f}, {0.25f}}).is_ok());
}

// Above 64 px, torchvision's ImageNet stem: the parameter count of
// torchvision.models.resnet18(num_classes=10) (7x7 stride-2 stem, max-pool).
TEST(MakeModelTest, Resnet18ImageNetStyleForLargeImages) {
  const ModelSpec spec = spec_of(3, 224, 224, 10);
  auto model = make_model("resnet18", spec);
  EXPECT_EQ(parameter_count(*model), 11181642);
  EXPECT_EQ(state_tensor(*model, "conv1.weight").sizes(), (std::vector<int64_t>{64, 3, 7, 7}));
  EXPECT_TRUE(check_output_shape(*model, spec).is_ok());
}

TEST(MakeModelTest, Resnet18CifarStyle) {
  const ModelSpec spec = spec_of(3, 8, 8, 10);
  auto model = make_model("resnet18", spec);
  EXPECT_EQ(parameter_count(*model), 11173962);  // torchvision-style CIFAR ResNet-18
  EXPECT_TRUE(has_state(*model, "layer1.0.bn1.running_mean"));
  EXPECT_TRUE(has_state(*model, "layer2.0.shortcut.0.weight"));
  EXPECT_FALSE(has_state(*model, "layer1.0.shortcut.0.weight"));

  // check_output_shape runs in eval mode: BatchNorm statistics stay, the flag is restored.
  const at::Tensor running_var = state_tensor(*model, "bn1.running_var").clone();
  ASSERT_TRUE(running_var.defined());
  model->train(true);
  EXPECT_TRUE(check_output_shape(*model, spec).is_ok());
  EXPECT_TRUE(model->is_training());
  EXPECT_TRUE(state_tensor(*model, "bn1.running_var").equal(running_var));
}

TEST(MakeModelTest, ParameterCountWithoutBuilding) {
  for (const char* name : {"mlp", "cnn", "resnet18"}) {
    for (const ModelSpec& spec : {spec_of(1, 28, 28, 10), spec_of(3, 32, 32, 7)}) {
      auto model = make_model(name, spec);
      EXPECT_EQ(builtin_parameter_count(name, spec), static_cast<double>(parameter_count(*model)))
          << name;
    }
  }
  // A 4096x4096 input: the mlp's first layer alone is 2^31 weights; counted, not built.
  EXPECT_EQ(builtin_parameter_count("mlp", spec_of(1, 4096, 4096, 10)),
            4096.0 * 4096 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10);
  EXPECT_EQ(builtin_parameter_count("/a/model.pt", spec_of(1, 28, 28, 10)), -1);
}

TEST(MakeModelTest, UnknownNameListsKnownModels) {
  const std::string message = make_model_error("vgg16", spec_of(1, 28, 28, 10));
  EXPECT_NE(message.find("vgg16"), std::string::npos) << message;
  EXPECT_NE(message.find("mlp, cnn, resnet18"), std::string::npos) << message;
  EXPECT_NE(message.find(".pt"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(MakeModelTest, BadTorchScriptFileIsNamed) {
  const std::string missing = make_model_error("/nonexistent/model.pt", spec_of(1, 28, 28, 10));
  EXPECT_NE(missing.find("'/nonexistent/model.pt' does not exist"), std::string::npos) << missing;

  TempDir dir;
  std::ofstream(dir / "junk.pt") << "not a model";
  const std::string junk = make_model_error(dir / "junk.pt", spec_of(1, 28, 28, 10));
  EXPECT_NE(junk.find("cannot load TorchScript model '" + (dir / "junk.pt") + "'"),
            std::string::npos)
      << junk;
  EXPECT_EQ(junk.find('\n'), std::string::npos) << junk;
}

TEST(CheckOutputShapeTest, NamesModelAndShapes) {
  auto model = make_model("mlp", spec_of(1, 28, 28, 10));
  Status wrong_classes = check_output_shape(*model, spec_of(1, 28, 28, 5));
  ASSERT_FALSE(wrong_classes.is_ok());
  EXPECT_NE(wrong_classes.message().find("mlp"), std::string::npos);
  EXPECT_NE(wrong_classes.message().find("[2, 10]"), std::string::npos) << wrong_classes.message();
  EXPECT_NE(wrong_classes.message().find("[2, 5]"), std::string::npos) << wrong_classes.message();

  // The mlp was built for [1, 28, 28]: its first layer says what it expects.
  Status wrong_input = check_output_shape(*model, spec_of(3, 32, 32, 10));
  ASSERT_FALSE(wrong_input.is_ok());
  EXPECT_EQ(wrong_input.message(),
            "model mlp expects 784 input values per sample (its first layer 'fc1.weight' is "
            "[128, 784]); the data's samples are [3, 32, 32]: 3072 values");
  // With verbose, LibTorch's own message (torch 2.15 puts the operator's name first).
  Status verbose = check_output_shape(*model, spec_of(3, 32, 32, 10), true);
  EXPECT_EQ(verbose.message().rfind("model mlp failed: ", 0), 0u) << verbose.message();
  EXPECT_NE(
      verbose.message().find("mat1 and mat2 shapes cannot be multiplied (2x3072 and 784x128)"),
      std::string::npos)
      << verbose.message();
}

TEST(ExceptionReasonTest, TheTorchScriptErrorUnderItsTraceback) {
  const std::runtime_error script(
      "The following operation failed in the TorchScript interpreter.\nTraceback of TorchScript "
      "(most recent call last):\n  File \"code/__torch__.py\", line 13\n    x = y\n\n"
      "RuntimeError: the reason\n");
  EXPECT_EQ(exception_reason(script), "RuntimeError: the reason");
  EXPECT_EQ(exception_reason(script, true).substr(0, 50),
            "The following operation failed in the TorchScript ");
  EXPECT_EQ(exception_reason(std::runtime_error("first\nsecond")), "first");
  // TorchScript's compile errors start with a line break.
  EXPECT_EQ(exception_reason(std::runtime_error("\nbuiltin cannot be used\n  File")),
            "builtin cannot be used");
  try {
    torch::zeros({2, 3}).matmul(torch::zeros({4, 5}));
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    // LibTorch's message on one line, without its backtrace (torch 2.15 puts the operator's
    // name first: "mm: mat1 and ...").
    const std::string reason = exception_reason(e);
    const std::string tail = "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)";
    EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
    ASSERT_GE(reason.size(), tail.size()) << reason;
    EXPECT_EQ(reason.substr(reason.size() - tail.size()), tail) << reason;
  }
}

// Each way a user's TorchScript file can fail gets one line naming the file and the reason.
TEST(ScriptModelTest, FailuresAreOneLineNamingTheModel) {
  TempDir dir;
  if (!testing::write_script_models(dir / "")) GTEST_SKIP() << STOKER_PYTHON " with torch";
  const ModelSpec spec = spec_of(1, 4, 4, 4);
  const at::Tensor batch = torch::rand({8, 1, 4, 4});

  auto tuple = make_model(dir / "tuple.pt", spec);
  EXPECT_TRUE(check_output_shape(*tuple, spec).is_ok());
  Result<at::Tensor> first = run_model(*tuple, batch, 4);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  EXPECT_EQ(first.value().sizes(), at::IntArrayRef({8, 4}));  // the logits, not the features

  auto conv3 = make_model(dir / "conv3.pt", spec);
  EXPECT_EQ(check_output_shape(*conv3, spec).message(),
            "model " + (dir / "conv3.pt") +
                " expects input with 3 channels (its first layer 'conv1.weight' is [8, 3, 3, "
                "3]); the data's samples are [1, 4, 4]");

  // Fine in evaluation mode (what check_output_shape runs), wrong in training.
  auto integer = make_model(dir / "int_in_training.pt", spec);
  EXPECT_TRUE(check_output_shape(*integer, spec).is_ok());
  EXPECT_EQ(run_model(*integer, batch, 4).status().message(),
            "model " + (dir / "int_in_training.pt") +
                " returns Long logits; they must be floating point");
  auto rows = make_model(dir / "rows_in_training.pt", spec);
  EXPECT_EQ(run_model(*rows, batch, 4).status().message(),
            "model " + (dir / "rows_in_training.pt") +
                " returns 1 rows of logits for a batch of 8 samples (input [8, 1, 4, 4], output "
                "[1, 4])");
  auto raises = make_model(dir / "raises.pt", spec);
  for (int call = 1; call <= 3; ++call) EXPECT_TRUE(run_model(*raises, batch, 4).is_ok());
  EXPECT_EQ(
      run_model(*raises, batch, 4).status().message(),
      "model " + (dir / "raises.pt") + " failed: builtins.RuntimeError: boom after three calls");
  Result<at::Tensor> verbose = run_model(*raises, batch, 4, true);
  EXPECT_NE(verbose.status().message().find("Traceback of TorchScript"), std::string::npos);
  EXPECT_NE(verbose.status().message().find("boom after three calls"), std::string::npos);

  for (const char* file : {"state_dict.pt", "pickled.pt"}) {
    EXPECT_EQ(make_model_error(dir / file, spec),
              "cannot load TorchScript model '" + (dir / file) +
                  "': it is a torch.save() archive (a state_dict or a pickled module), not "
                  "TorchScript; save the model with torch.jit.script(model).save(path)");
  }
  EXPECT_EQ(make_model_error(dir / "legacy.pt", spec),
            "cannot load TorchScript model '" + (dir / "legacy.pt") +
                "': it is a torch.save() pickle (a state_dict or a pickled module), not "
                "TorchScript; save the model with torch.jit.script(model).save(path)");
}

// Every built-in model with BatchNorm statistics away from their initial values (one forward
// in training mode), in evaluation mode.
struct Builtin {
  std::string name;
  ModelSpec spec;
};
const Builtin kBuiltins[] = {{"mlp", spec_of(1, 28, 28, 10)},
                             {"cnn", spec_of(1, 28, 28, 10)},
                             {"resnet18", spec_of(3, 28, 28, 7)},   // the small-image stem
                             {"resnet18", spec_of(3, 72, 72, 5)}};  // torchvision's stem

std::unique_ptr<Model> trained_model(const Builtin& t) {
  auto model = make_model(t.name, t.spec);
  model->train(true);
  {
    torch::NoGradGuard no_grad;
    model->forward(torch::rand({4, t.spec.channels, t.spec.height, t.spec.width}) * 3 + 1);
  }
  model->train(false);
  return model;
}

// load() brings back what save() (TorchScript) and save_state() (a torch::save archive) wrote,
// into a model built afresh (other initial weights).
TEST(BuiltinModelTest, SaveLoadRoundTripsEveryModel) {
  TempDir dir;
  const InputNormalization input{{0.5f}, {0.25f}};
  for (const Builtin& t : kBuiltins) {
    SCOPED_TRACE(t.name + " " + std::to_string(t.spec.height) + " px");
    auto model = trained_model(t);
    const at::Tensor x = torch::rand({3, t.spec.channels, t.spec.height, t.spec.width});
    const at::Tensor expected = model->forward(x).detach();
    ASSERT_TRUE(model->save(dir / "model.pt", input).is_ok());
    ASSERT_TRUE(model->save_state(dir / "state.pt").is_ok());

    for (const char* file : {"model.pt", "state.pt"}) {
      auto fresh = make_model(t.name, t.spec);
      fresh->train(false);
      ASSERT_FALSE(fresh->forward(x).allclose(expected, 0, 1e-6));
      const std::vector<at::Tensor> params = fresh->parameters();
      Status loaded = fresh->load(dir / file);
      ASSERT_TRUE(loaded.is_ok()) << file << ": " << loaded.message();
      EXPECT_TRUE(fresh->forward(x).allclose(expected, 0, 1e-6)) << file;
      EXPECT_TRUE(params[0].is_same(fresh->parameters()[0]));  // identity kept for the optimizer
    }
  }
  auto model = make_model("cnn", spec_of(1, 8, 8, 4));
  Status missing = model->load(dir / "missing.pt");
  EXPECT_EQ(missing.code(), StatusCode::kCorrupt);
  EXPECT_NE(missing.message().find(dir / "missing.pt"), std::string::npos) << missing.message();
  // Another architecture's file names what does not fit, in one line.
  ASSERT_TRUE(make_model("mlp", spec_of(1, 8, 8, 4))->save(dir / "mlp.pt", input).is_ok());
  Status other = model->load(dir / "mlp.pt");
  EXPECT_EQ(other.code(), StatusCode::kCorrupt);
  EXPECT_EQ(other.message().find('\n'), std::string::npos) << other.message();
}

// The file save() writes is TorchScript that runs on its own: forward as the model's, in
// evaluation mode, with the model's state names; predict() normalises uint8 images first; and
// TorchScript's train()/eval() switch BatchNorm as the C++ modules do.
TEST(BuiltinModelTest, SavedFileIsARunnableTorchScriptModule) {
  TempDir dir;
  const InputNormalization input{{0.2f, 0.4f, 0.6f}, {0.5f, 0.25f, 0.125f}};
  for (const Builtin& t : kBuiltins) {
    SCOPED_TRACE(t.name + " " + std::to_string(t.spec.height) + " px");
    auto model = trained_model(t);
    const bool rgb = t.spec.channels == 3;
    ASSERT_TRUE(
        model->save(dir / "model.pt", rgb ? input : InputNormalization{{0.3f}, {0.2f}}).is_ok());
    torch::jit::Module script = torch::jit::load(dir / "model.pt");
    EXPECT_FALSE(script.is_training());

    std::vector<std::string> names, expected_names;
    for (const auto& p : script.named_parameters()) names.push_back(p.name);
    for (const auto& b : script.named_buffers()) names.push_back(b.name);
    for (const auto& [name, tensor] : model->named_state()) expected_names.push_back(name);
    expected_names.push_back("input_mean");
    expected_names.push_back("input_std");
    EXPECT_EQ(names, expected_names);

    const at::Tensor images =
        torch::randint(0, 256, {3, t.spec.channels, t.spec.height, t.spec.width}, torch::kUInt8);
    const at::Tensor mean = torch::tensor(rgb ? input.mean : std::vector<float>{0.3f});
    const at::Tensor std = torch::tensor(rgb ? input.std : std::vector<float>{0.2f});
    const at::Tensor x =
        (images.to(torch::kFloat32) / 255 - mean.view({1, -1, 1, 1})) / std.view({1, -1, 1, 1});
    torch::NoGradGuard no_grad;
    const at::Tensor expected = model->forward(x);
    EXPECT_TRUE(script.forward({x}).toTensor().allclose(expected, 0, 1e-6));
    EXPECT_TRUE(script.get_method("predict")({images}).toTensor().allclose(expected, 1e-5, 1e-5));

    // In training mode: batch statistics, and the running ones updated, as in C++.
    script.train(true);
    model->train(true);
    const at::Tensor batch_stats = model->forward(x);
    EXPECT_TRUE(script.forward({x}).toTensor().allclose(batch_stats, 1e-5, 1e-5));
    for (const auto& b : script.named_buffers()) {
      if (b.name.rfind("input_", 0) == 0) continue;
      for (const auto& [name, tensor] : model->named_state()) {
        if (name == b.name) {
          EXPECT_TRUE(b.value.allclose(tensor, 1e-5, 1e-6)) << name;
        }
      }
    }
  }
}

TEST(BuiltinModelTest, SaveErrorsAreOneLine) {
  TempDir dir;
  auto model = make_model("cnn", spec_of(1, 8, 8, 4));
  Status channels = model->save(dir / "a.pt", {{0.1f, 0.2f}, {0.3f, 0.4f}});
  EXPECT_EQ(channels.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(channels.message(),
            "model cnn takes 1 input channels: its input mean and std need one value each or one "
            "per channel, not 2 and 2");
  EXPECT_FALSE(fs::exists(dir / "a.pt"));

  Status unwritable = model->save(dir / "no/such/dir/a.pt", {{0.1f}, {0.3f}});
  EXPECT_FALSE(unwritable.is_ok());
  EXPECT_NE(unwritable.message().find(dir / "no/such/dir/a.pt"), std::string::npos)
      << unwritable.message();
  EXPECT_EQ(unwritable.message().find('\n'), std::string::npos) << unwritable.message();
}

TEST(BuiltinModelTest, LoadStateCopiesValuesAndChecksShapes) {
  const ModelSpec spec = spec_of(1, 8, 8, 4);
  auto a = make_model("mlp", spec);
  auto b = make_model("mlp", spec);
  const at::Tensor x = torch::rand({2, 1, 8, 8});
  ASSERT_FALSE(a->forward(x).allclose(b->forward(x)));
  ASSERT_TRUE(b->load_state(a->named_state()).is_ok());
  EXPECT_TRUE(a->forward(x).allclose(b->forward(x)));

  auto other = make_model("mlp", spec_of(1, 8, 8, 5));
  Status mismatch = b->load_state(other->named_state());
  ASSERT_FALSE(mismatch.is_ok());
  EXPECT_NE(mismatch.message().find("fc3.weight"), std::string::npos) << mismatch.message();

  NamedTensors partial = a->named_state();
  partial.pop_back();
  EXPECT_FALSE(b->load_state(partial).is_ok());
}

// Runs a Python snippet with Debian's interpreter (which has torch); returns its exit status.
int run_python(const std::string& script_path, const std::string& code, const std::string& args) {
  std::ofstream(script_path) << code;
  return std::system((STOKER_PYTHON " " + script_path + " " + args).c_str());
}

constexpr const char* kMakeScript = R"(
import sys, torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 4 * 4, 3)
    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))
torch.manual_seed(0)
torch.jit.script(Net()).save(sys.argv[1])
)";

// Evaluates a TorchScript file on the same input as script_input() and writes the outputs.
constexpr const char* kEvalScript = R"(
import sys, torch
m = torch.jit.load(sys.argv[1])
m.eval()
x = torch.arange(2 * 1 * 4 * 4, dtype=torch.float32).reshape(2, 1, 4, 4) / 10
with torch.no_grad():
    y = m(x)
with open(sys.argv[2], 'w') as f:
    f.write(' '.join(repr(v) for v in y.flatten().tolist()))
)";

at::Tensor script_input() {
  return torch::arange(2 * 1 * 4 * 4, torch::kFloat32).reshape({2, 1, 4, 4}) / 10;
}

TEST(ScriptModelTest, TrainsInCppAndReloadsInPython) {
  if (std::system(STOKER_PYTHON " -c 'import torch' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << STOKER_PYTHON " with torch is not available";
  }
  TempDir dir;
  const std::string original = dir / "net.pt";
  ASSERT_EQ(run_python(dir / "make.py", kMakeScript, original), 0);

  const ModelSpec spec = spec_of(1, 4, 4, 3);
  auto model = make_model(original, spec);
  EXPECT_EQ(model->name(), original);
  EXPECT_TRUE(check_output_shape(*model, spec).is_ok());
  EXPECT_FALSE(check_output_shape(*model, spec_of(1, 4, 4, 10)).is_ok());
  EXPECT_TRUE(has_state(*model, "bn.running_mean"));
  EXPECT_EQ(parameter_count(*model), 4 * 9 + 4 + 4 + 4 + 64 * 3 + 3);

  const at::Tensor x = script_input();
  model->train(false);
  const at::Tensor before = model->forward(x).detach();

  // One training step.
  OptimizerSpec adam;
  adam.lr = 0.1;
  auto optimizer = make_optimizer(adam, model->parameters());
  model->train(true);
  optimizer->zero_grad();
  torch::nn::functional::cross_entropy(model->forward(x), torch::tensor({0, 2})).backward();
  optimizer->step();
  model->train(false);
  const at::Tensor after = model->forward(x).detach();
  ASSERT_FALSE(after.allclose(before));

  const std::string trained = dir / "trained.pt";
  model->train(true);
  ASSERT_TRUE(model->save(trained, {{0.5f}, {0.5f}}).is_ok());
  EXPECT_TRUE(model->is_training());
  EXPECT_FALSE(torch::jit::load(trained).is_training()) << "saved in evaluation mode";
  ASSERT_EQ(run_python(dir / "eval.py", kEvalScript, trained + " " + (dir / "out.txt")), 0);
  std::ifstream in(dir / "out.txt");
  std::vector<float> values;
  for (double v; in >> v;) values.push_back(static_cast<float>(v));
  ASSERT_EQ(values.size(), 6u);
  EXPECT_TRUE(torch::tensor(values).reshape({2, 3}).allclose(after, 1e-5, 1e-6))
      << "python: " << torch::tensor(values) << "\nc++: " << after;

  // load() brings the trained state back into a fresh copy of the original.
  auto fresh = make_model(original, spec);
  fresh->train(false);
  ASSERT_TRUE(fresh->forward(x).allclose(before));
  ASSERT_TRUE(fresh->load(trained).is_ok());
  EXPECT_TRUE(fresh->forward(x).allclose(after));
}

}  // namespace
}  // namespace stoker
