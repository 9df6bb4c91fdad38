// color_jitter against torchvision: the same images and factors through
// torchvision.transforms.v2.functional's adjust_brightness and adjust_contrast (STOKER_PYTHON),
// in the drawn order, pixel for pixel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr const char* kTorchvision = R"(
import json, sys
import numpy as np
import torch
from torchvision.transforms.v2 import functional as F
cases = json.load(open(sys.argv[1]))
for i, case in enumerate(cases):
    x = np.fromfile(f"{sys.argv[2]}/{i}.in", dtype=np.uint8).reshape(case["shape"])
    x = torch.from_numpy(x)
    steps = [("brightness", F.adjust_brightness), ("contrast", F.adjust_contrast)]
    if not case["brightness_first"]:
        steps.reverse()
    for name, adjust in steps:
        if case[name] is not None:
            x = adjust(x, case[name])
    x.numpy().tofile(f"{sys.argv[2]}/{i}.out")
)";

std::shared_ptr<const PixelOp> jitter(double brightness, double contrast,
                                      const std::vector<int64_t>& shape) {
  const OpCall call =
      make_op_call("color_jitter", {{"brightness", brightness}, {"contrast", contrast}}).value();
  return call.op->make_pixel(call.params, {"image", shape}).value();
}

SampleInput sample(int64_t index) {
  SampleInput input;
  input.index = index;
  input.epoch = 2;
  input.seed = 7;
  input.step = 1;
  return input;
}

// The draws ops/color_jitter.cc documents: (brightness first, brightness factor, contrast
// factor), a factor null when its amount is 0.
nlohmann::json draws(const SampleInput& input, double brightness, double contrast) {
  CounterRng rng = input.rng();
  const double order = rng.next_double();
  const auto factor = [&](double amount) {
    const double u = rng.next_double();
    const double lo = std::max(0.0, 1 - amount);
    return amount > 0 ? nlohmann::json(lo + (1 + amount - lo) * u) : nlohmann::json();
  };
  const nlohmann::json b = factor(brightness);
  const nlohmann::json c = factor(contrast);
  return {{"brightness_first", order < 0.5}, {"brightness", b}, {"contrast", c}};
}

// Pixels of a `kind` of image: noise over the whole range, a narrow band (low contrast), or
// saturated.
std::vector<uint8_t> pixels(size_t n, int kind, uint64_t seed) {
  CounterRng rng(seed, 0);
  std::vector<uint8_t> out(n);
  for (uint8_t& x : out) {
    const uint64_t r = rng.uniform_below(256);
    x = static_cast<uint8_t>(kind == 0 ? r : kind == 1 ? 100 + r % 24 : 250 + r % 6);
  }
  return out;
}

TEST(ColorJitterTest, EqualsTorchvisionsAdjustmentsPixelForPixel) {
  const std::vector<std::vector<int64_t>> shapes = {
      {3, 224, 224}, {3, 256, 256}, {3, 17, 23}, {1, 28, 28}, {1, 5, 7}, {3, 1, 1}};
  const std::vector<std::pair<double, double>> amounts = {
      {0.4, 0.4}, {2.0, 0.0}, {0.0, 1.0}, {0.9, 3.0}, {1.0, 1.0}, {0.2, 0.0}};
  testing::TempDir dir;
  nlohmann::json cases = nlohmann::json::array();
  std::vector<std::vector<uint8_t>> ours;
  int orders[2] = {0, 0};
  for (size_t s = 0; s < shapes.size(); ++s) {
    const std::vector<int64_t>& shape = shapes[s];
    const size_t n = static_cast<size_t>(shape[0] * shape[1] * shape[2]);
    for (size_t a = 0; a < amounts.size(); ++a) {
      for (int64_t index = 0; index < 3; ++index) {
        const auto [brightness, contrast] = amounts[a];
        const size_t i = cases.size();
        std::vector<uint8_t> image = pixels(n, static_cast<int>(i % 3), i);
        std::ofstream(dir / (std::to_string(i) + ".in"), std::ios::binary)
            .write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(n));
        const SampleInput input = sample(index + 10 * static_cast<int64_t>(i));
        nlohmann::json c = draws(input, brightness, contrast);
        c["shape"] = shape;
        ++orders[c["brightness_first"].get<bool>()];
        cases.push_back(c);
        ASSERT_TRUE(jitter(brightness, contrast, shape)->apply(input, image.data()).is_ok());
        ours.push_back(std::move(image));
      }
    }
  }
  EXPECT_GT(orders[0], 10);  // both orders are drawn
  EXPECT_GT(orders[1], 10);
  std::ofstream(dir / "cases.json") << cases.dump();
  std::ofstream(dir / "reference.py") << kTorchvision;
  ASSERT_EQ(std::system((std::string(STOKER_PYTHON) + " " + (dir / "reference.py") + " " +
                         (dir / "cases.json") + " " + dir.path())
                            .c_str()),
            0);
  for (size_t i = 0; i < ours.size(); ++i) {
    std::ifstream in(dir / (std::to_string(i) + ".out"), std::ios::binary);
    const std::vector<uint8_t> theirs{std::istreambuf_iterator<char>(in), {}};
    ASSERT_EQ(theirs.size(), ours[i].size()) << "case " << i;
    size_t differ = 0;
    for (size_t k = 0; k < theirs.size(); ++k) differ += theirs[k] != ours[i][k];
    EXPECT_EQ(differ, 0u) << "case " << i << ": " << cases[i].dump();
  }
}

TEST(ColorJitterTest, DrawsDependOnTheSampleAndItsStepOnly) {
  const std::vector<int64_t> shape = {3, 8, 8};
  const std::vector<uint8_t> image = pixels(192, 0, 1);
  const auto jittered = [&](const SampleInput& input) {
    std::vector<uint8_t> out = image;
    EXPECT_TRUE(jitter(0.5, 0.5, shape)->apply(input, out.data()).is_ok());
    return out;
  };
  EXPECT_EQ(jittered(sample(3)), jittered(sample(3)));
  EXPECT_NE(jittered(sample(3)), jittered(sample(4)));
  SampleInput other_step = sample(3);
  other_step.step = 2;
  EXPECT_NE(jittered(sample(3)), jittered(other_step));
  std::vector<uint8_t> unchanged = image;
  ASSERT_TRUE(jitter(0, 0, shape)->apply(sample(3), unchanged.data()).is_ok());
  EXPECT_EQ(unchanged, image);
}

TEST(ColorJitterTest, ImagesOfOneOrThreeChannelsOnly) {
  const OpCall call = make_op_call("color_jitter", {{"brightness", 0.1}}).value();
  EXPECT_EQ(call.op->make_pixel(call.params, {"image", {28, 28}}).status().message(),
            "field 'image': color_jitter needs images [1 or 3, H, W], not [28, 28]");
  EXPECT_FALSE(call.op->make_pixel(call.params, {"image", {2, 4, 4}}).is_ok());
  EXPECT_EQ(make_op_call("color_jitter", {{"contrast", -0.5}}).status().message(),
            "color_jitter: contrast must be a number at least 0, not -0.5");
}

}  // namespace
}  // namespace stoker
