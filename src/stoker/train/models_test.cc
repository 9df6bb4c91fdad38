#include "stoker/train/models.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/nn/functional/loss.h>
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
  // With verbose, LibTorch's own message.
  Status verbose = check_output_shape(*model, spec_of(3, 32, 32, 10), true);
  EXPECT_NE(verbose.message().find("model mlp failed: mat1 and mat2 shapes cannot be multiplied"),
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
  try {
    torch::zeros({2, 3}).matmul(torch::zeros({4, 5}));
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_EQ(exception_reason(e), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  }
}

// Each way a user's TorchScript file can fail gets one line naming the file and the reason.
TEST(ScriptModelTest, FailuresAreOneLineNamingTheModel) {
  TempDir dir;
  if (!testing::write_script_models(dir / "")) GTEST_SKIP() << "/usr/bin/python3 with torch";
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

TEST(BuiltinModelTest, SaveLoadRoundTrip) {
  TempDir dir;
  const ModelSpec spec = spec_of(1, 8, 8, 4);
  auto model = make_model("cnn", spec);
  model->train(false);
  const at::Tensor x = torch::rand({3, 1, 8, 8});
  const at::Tensor expected = model->forward(x).detach();
  ASSERT_TRUE(model->save(dir / "cnn.bin").is_ok());

  std::vector<at::Tensor> params = model->parameters();
  {
    torch::NoGradGuard no_grad;
    for (at::Tensor& p : params) p.zero_();
  }
  ASSERT_FALSE(model->forward(x).allclose(expected));
  ASSERT_TRUE(model->load(dir / "cnn.bin").is_ok());
  EXPECT_TRUE(model->forward(x).allclose(expected));
  EXPECT_TRUE(params[0].is_same(model->parameters()[0]));  // identity kept for the optimizer

  EXPECT_FALSE(model->load(dir / "missing.bin").is_ok());
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
  return std::system(("/usr/bin/python3 " + script_path + " " + args).c_str());
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
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with torch is not available";
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
  ASSERT_TRUE(model->save(trained).is_ok());
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
