// `stoker train --save-model` of each built-in model, run by Python's torch: the file is loaded
// with torch.jit.load, called on the evaluation images normalised as the trainer does, and its
// logits are compared with stoker's own (the saved model loaded back into a C++ model) and its
// accuracy with what the trainer reported; predict() on the uint8 images gives the same logits.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <vector>

#include "stoker/store/dataset_writer.h"
#include "stoker/store/record_encoder.h"
#include "stoker/testing/cli_run.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/train/input_normalizer.h"
#include "stoker/train/models.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

constexpr int64_t kClasses = 4;
constexpr int64_t kChannels = 3;
constexpr int64_t kTestRecords = 48;
const std::vector<float> kMean = {0.4f, 0.5f, 0.6f};
const std::vector<float> kStd = {0.2f, 0.25f, 0.3f};

// Loads the model, checks torch's train()/eval() switch, and writes its logits on the images
// normalised with the mean and std given (not read from the file), and those of predict().
constexpr const char* kRunSavedModelPy = R"(
import json, sys, torch
model, images, out = sys.argv[1], sys.argv[2], sys.argv[3]
n, c, h, w = (int(v) for v in sys.argv[4:8])
mean = torch.tensor([float(v) for v in sys.argv[8].split(',')]).view(1, -1, 1, 1)
std = torch.tensor([float(v) for v in sys.argv[9].split(',')]).view(1, -1, 1, 1)
m = torch.jit.load(model)
saved_in_eval = not any(s.training for s in m.modules())
m.train()
switched_to_train = all(s.training for s in m.modules())
m.eval()
switched_back = not any(s.training for s in m.modules())
with open(images, 'rb') as f:
    pixels = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).view(n, c, h, w)
with torch.no_grad():
    logits = m((pixels.float() / 255 - mean) / std)
    predicted = m.predict(pixels)
with open(out + '.forward', 'wb') as f:
    f.write(logits.contiguous().numpy().tobytes())
with open(out + '.predict', 'wb') as f:
    f.write(predicted.contiguous().numpy().tobytes())
with open(out + '.json', 'w') as f:
    json.dump({'saved_in_eval': saved_in_eval, 'switched_to_train': switched_to_train,
               'switched_back': switched_back}, f)
)";

bool python_has_torch() {
  return std::system(STOKER_PYTHON " -c 'import torch' >/dev/null 2>&1") == 0;
}

struct Samples {
  std::vector<uint8_t> images;  // back to back
  std::vector<int64_t> labels;
};

// Writes a dataset of `n` records {image: uint8 [3, size, size], label} at `dir`: class c lights
// up a band of rows in channel c % 3 over noise. Returns what it wrote.
Samples write_rgb_dataset(const std::string& dir, int64_t n, int64_t size, uint64_t seed) {
  Schema schema = Schema::create({{"image", DType::kUint8, {kChannels, size, size}},
                                  {"label", DType::kInt64, {}}})
                      .value_or_throw();
  std::mt19937_64 rng(seed);
  RecordEncoder encoder(schema);
  auto writer = DatasetWriter::create(dir, schema, {}).value_or_throw();
  const int64_t pixels = kChannels * size * size;
  Samples samples;
  samples.images.resize(static_cast<size_t>(n * pixels));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = static_cast<int64_t>(rng() % kClasses);
    samples.labels.push_back(label);
    uint8_t* image = samples.images.data() + i * pixels;
    for (int64_t p = 0; p < pixels; ++p) {
      const int64_t channel = p / (size * size), row = p / size % size;
      const bool lit = channel == label % kChannels && row * kClasses / size == label;
      image[p] = static_cast<uint8_t>(lit ? 150 + rng() % 106 : rng() % 80);
    }
    throw_if_error(encoder.set_fixed(0, image, static_cast<size_t>(pixels)));
    throw_if_error(encoder.set_fixed(1, &label, sizeof(label)));
    const std::vector<uint8_t> record = encoder.encode();
    throw_if_error(writer->append(record.data(), record.size()));
  }
  throw_if_error(writer->finish());
  return samples;
}

at::Tensor read_floats(const std::string& path, int64_t rows) {
  const std::string bytes = read_file(path).value_or_throw();
  return torch::from_blob(const_cast<char*>(bytes.data()),
                          {rows, static_cast<int64_t>(bytes.size() / sizeof(float)) / rows},
                          torch::kFloat32)
      .clone();
}

struct SaveCase {
  const char* model;
  int64_t size;  // of the images, in pixels a side
};

class SaveModelCliTest : public ::testing::TestWithParam<SaveCase> {};

TEST_P(SaveModelCliTest, PythonRunsTheSavedModelAsStokerDoes) {
  if (!python_has_torch()) GTEST_SKIP() << STOKER_PYTHON " cannot import torch";
  const SaveCase c = GetParam();
  testing::TempDir dir;
  write_rgb_dataset(dir / "data/train", 96, c.size, 1);
  const Samples test = write_rgb_dataset(dir / "data/test", kTestRecords, c.size, 2);
  ASSERT_TRUE(
      write_file_atomically(dir / "test.u8", std::string(test.images.begin(), test.images.end()))
          .is_ok());

  const std::string model_path = dir / "model.pt";
  const testing::RunResult run = testing::run(
      fmt::format("train --data {} --model {} --epochs 1 --batch 32 --mean {} --std {} --log {} "
                  "--save-model {}",
                  dir / "data", c.model, fmt::join(kMean, " "), fmt::join(kStd, " "),
                  dir / "log.jsonl", model_path),
      dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("model saved to " + model_path), std::string::npos) << run.out;

  const std::string out = dir / "python";
  std::ofstream(dir / "run.py") << kRunSavedModelPy;
  const std::string python = fmt::format(
      STOKER_PYTHON " {} {} {} {} {} {} {} {} {} {}", dir / "run.py", model_path, dir / "test.u8",
      out, kTestRecords, kChannels, c.size, c.size, fmt::join(kMean, ","), fmt::join(kStd, ","));
  ASSERT_EQ(std::system(python.c_str()), 0) << python;
  const nlohmann::json flags = nlohmann::json::parse(read_file(out + ".json").value_or_throw());
  EXPECT_TRUE(flags["saved_in_eval"].get<bool>());
  EXPECT_TRUE(flags["switched_to_train"].get<bool>());
  EXPECT_TRUE(flags["switched_back"].get<bool>());
  const at::Tensor python_logits = read_floats(out + ".forward", kTestRecords);
  ASSERT_EQ(python_logits.sizes(), at::IntArrayRef({kTestRecords, kClasses}));

  // stoker's logits: the saved file loaded into a C++ model, on the trainer's normalisation.
  ModelSpec spec;
  spec.channels = kChannels;
  spec.height = spec.width = c.size;
  spec.num_classes = kClasses;
  std::unique_ptr<Model> model = make_model(c.model, spec);
  ASSERT_TRUE(model->load(model_path).is_ok());
  model->train(false);
  InputNormalizer normalize({kChannels, c.size, c.size}, kMean, kStd, kTestRecords,
                            c10::Device(c10::kCPU));
  at::Tensor pixels = torch::from_blob(const_cast<uint8_t*>(test.images.data()),
                                       {kTestRecords, kChannels, c.size, c.size}, torch::kUInt8);
  torch::NoGradGuard no_grad;
  const at::Tensor logits = model->forward(normalize(pixels));
  EXPECT_TRUE(python_logits.allclose(logits, 1e-5, 1e-5))
      << "largest difference " << (python_logits - logits).abs().max().item<float>();
  EXPECT_TRUE(read_floats(out + ".predict", kTestRecords).allclose(python_logits, 1e-5, 1e-5));

  // The accuracy the trainer reported on the test split is Python's.
  std::ifstream log(dir / "log.jsonl");
  std::optional<double> reported;
  for (std::string line; std::getline(log, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record["record"] == "epoch") reported = record["test_accuracy"].get<double>();
  }
  ASSERT_TRUE(reported.has_value()) << "no epoch record";
  const at::Tensor labels = torch::tensor(test.labels);
  const int64_t correct = python_logits.argmax(1).eq(labels).sum().item<int64_t>();
  EXPECT_EQ(correct, std::llround(*reported * kTestRecords)) << "reported accuracy " << *reported;
}

INSTANTIATE_TEST_SUITE_P(Builtins, SaveModelCliTest,
                         ::testing::Values(SaveCase{"mlp", 8}, SaveCase{"cnn", 8},
                                           SaveCase{"resnet18", 8},
                                           SaveCase{"resnet18", 72}),  // torchvision's stem
                         [](const ::testing::TestParamInfo<SaveCase>& info) {
                           return fmt::format("{}_{}px", info.param.model, info.param.size);
                         });

}  // namespace
}  // namespace stoker
