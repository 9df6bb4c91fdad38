// color_jitter against torchvision: the same images and factors through
// torchvision.transforms.v2.functional's adjust_brightness, adjust_contrast, adjust_saturation
// and adjust_hue (STOKER_PYTHON), in the drawn order, pixel for pixel: on uint8 tensors, and
// with backend=pil on PIL images.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

// The reference: a case's image, as a uint8 tensor or (backend "pil") a PIL image of mode "L" or
// "RGB", through torchvision's functions, which take the backend of their input.
constexpr const char* kTorchvision = R"(
import json, sys
import numpy as np
import torch
from PIL import Image
from torchvision.transforms.v2 import functional as F
adjust = {"brightness": F.adjust_brightness, "contrast": F.adjust_contrast,
          "saturation": F.adjust_saturation, "hue": F.adjust_hue}
cases = json.load(open(sys.argv[1]))
for i, case in enumerate(cases):
    c, h, w = case["shape"]
    x = np.fromfile(f"{sys.argv[2]}/{i}.in", dtype=np.uint8).reshape(c, h, w)
    pil = case["backend"] == "pil"
    x = Image.fromarray(x[0] if c == 1 else x.transpose(1, 2, 0)) if pil else torch.from_numpy(x)
    for name in case["order"]:
        if case[name] is not None:
            x = adjust[name](x, case[name])
    x = np.asarray(x).reshape(h, w, c).transpose(2, 0, 1) if pil else x.numpy()
    np.ascontiguousarray(x).tofile(f"{sys.argv[2]}/{i}.out")
)";

// brightness, contrast, saturation, hue
using Amounts = std::array<double, 4>;
const char* const kNames[4] = {"brightness", "contrast", "saturation", "hue"};

std::shared_ptr<const PixelOp> jitter(const Amounts& amounts, const std::vector<int64_t>& shape,
                                      const std::string& backend = "tensor") {
  std::vector<std::pair<std::string, ParamValue>> given;
  for (int a = 0; a < 4; ++a) given.emplace_back(kNames[a], amounts[a]);
  given.emplace_back("backend", backend);
  const OpCall call = make_op_call("color_jitter", given).value();
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

// The draws ops/color_jitter.cc documents: {"order": the four names in the drawn order, and
// each name's factor, null when its amount is 0}.
nlohmann::json draws(const SampleInput& input, const Amounts& amounts) {
  CounterRng rng = input.rng();
  const double first = rng.next_double();
  nlohmann::json out;
  for (int a = 0; a < 4; ++a) {
    const double u = rng.next_double();
    const double lo = a == 3 ? -amounts[a] : std::max(0.0, 1 - amounts[a]);
    const double hi = a == 3 ? amounts[a] : 1 + amounts[a];
    out[kNames[a]] = amounts[a] > 0 ? nlohmann::json(lo + (hi - lo) * u) : nlohmann::json();
  }
  std::vector<std::string> order = {"brightness", "contrast"};
  if (first >= 0.5) std::swap(order[0], order[1]);
  order.insert(order.begin() + static_cast<int>(3 * rng.next_double()), "saturation");
  order.insert(order.begin() + static_cast<int>(4 * rng.next_double()), "hue");
  out["order"] = order;
  return out;
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

// color_jitter with `backend` against torchvision's functions on that backend, for the same
// factors and order: every pixel equal.
void expect_torchvisions_pixels(const std::string& backend) {
  const std::vector<std::vector<int64_t>> shapes = {{3, 224, 224}, {3, 256, 256}, {3, 17, 23},
                                                    {1, 28, 28},   {1, 5, 7},     {3, 1, 1}};
  // Each adjustment alone, small and large, then all four together.
  const std::vector<Amounts> amounts = {
      {0.2, 0, 0, 0},       {2.0, 0, 0, 0},       {0, 1.0, 0, 0},       {0, 3.0, 0, 0},
      {0, 0, 0.3, 0},       {0, 0, 2.5, 0},       {0, 0, 0, 0.05},      {0, 0, 0, 0.5},
      {0.4, 0.4, 0.4, 0.1}, {0.9, 3.0, 2.0, 0.5}, {1.0, 1.0, 1.0, 0.25}};
  testing::TempDir dir;
  nlohmann::json cases = nlohmann::json::array();
  std::vector<std::vector<uint8_t>> ours;
  for (const std::vector<int64_t>& shape : shapes) {
    const size_t n = static_cast<size_t>(shape[0] * shape[1] * shape[2]);
    for (const Amounts& amount : amounts) {
      for (int64_t index = 0; index < 4; ++index) {
        const size_t i = cases.size();
        std::vector<uint8_t> image = pixels(n, static_cast<int>(i % 3), i);
        std::ofstream(dir / (std::to_string(i) + ".in"), std::ios::binary)
            .write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(n));
        const SampleInput input = sample(index + 10 * static_cast<int64_t>(i));
        nlohmann::json c = draws(input, amount);
        c["shape"] = shape;
        c["backend"] = backend;
        cases.push_back(c);
        ASSERT_TRUE(jitter(amount, shape, backend)->apply(input, image.data()).is_ok());
        ours.push_back(std::move(image));
      }
    }
  }
  std::ofstream(dir / "cases.json") << cases.dump();
  std::ofstream(dir / "reference.py") << kTorchvision;
  ASSERT_EQ(std::system((stoker::testing::reference_python() + " " + (dir / "reference.py") + " " +
                         (dir / "cases.json") + " " + dir.path())
                            .c_str()),
            0);
  for (size_t i = 0; i < ours.size(); ++i) {
    std::ifstream in(dir / (std::to_string(i) + ".out"), std::ios::binary);
    const std::vector<uint8_t> theirs{std::istreambuf_iterator<char>(in), {}};
    ASSERT_EQ(theirs.size(), ours[i].size()) << "case " << i;
    size_t differ = 0;
    int most = 0;
    for (size_t k = 0; k < theirs.size(); ++k) {
      differ += theirs[k] != ours[i][k];
      most = std::max(most, std::abs(theirs[k] - ours[i][k]));
    }
    EXPECT_EQ(differ, 0u) << "case " << i << " (at most " << most << " apart): " << cases[i].dump();
  }
}

TEST(ColorJitterTest, EqualsTorchvisionsTensorAdjustmentsPixelForPixel) {
  expect_torchvisions_pixels("tensor");
}

TEST(ColorJitterTest, WithBackendPilEqualsTorchvisionsPilAdjustmentsPixelForPixel) {
  expect_torchvisions_pixels("pil");
}

TEST(ColorJitterTest, EachOfTheTwentyFourOrdersIsDrawnAlike) {
  std::map<nlohmann::json, int> orders;
  for (int64_t index = 0; index < 4800; ++index)
    ++orders[draws(sample(index), {1, 1, 1, 0.5})["order"]];
  EXPECT_EQ(orders.size(), 24u);
  for (const auto& [order, count] : orders) {
    EXPECT_GT(count, 140) << order.dump();  // 200 expected; 4 standard deviations either way
    EXPECT_LT(count, 260) << order.dump();
  }
}

TEST(ColorJitterTest, DrawsDependOnTheSampleAndItsStepOnly) {
  const std::vector<int64_t> shape = {3, 8, 8};
  const std::vector<uint8_t> image = pixels(192, 0, 1);
  for (const Amounts& amount :
       std::vector<Amounts>{{0.5, 0.5, 0.5, 0.2}, {0, 0, 0.5, 0}, {0, 0, 0, 0.2}}) {
    const auto jittered = [&](const SampleInput& input) {
      std::vector<uint8_t> out = image;
      EXPECT_TRUE(jitter(amount, shape)->apply(input, out.data()).is_ok());
      return out;
    };
    EXPECT_EQ(jittered(sample(3)), jittered(sample(3)));
    EXPECT_NE(jittered(sample(3)), jittered(sample(4)));
    SampleInput other_step = sample(3);
    other_step.step = 2;
    EXPECT_NE(jittered(sample(3)), jittered(other_step));
  }
  std::vector<uint8_t> unchanged = image;
  ASSERT_TRUE(jitter({0, 0, 0, 0}, shape)->apply(sample(3), unchanged.data()).is_ok());
  EXPECT_EQ(unchanged, image);
}

TEST(ColorJitterTest, SaturationAndHueLeaveOneChannelAsItIs) {
  const std::vector<uint8_t> image = pixels(64, 0, 2);
  std::vector<uint8_t> out = image;
  ASSERT_TRUE(jitter({0, 0, 2.0, 0.5}, {1, 8, 8})->apply(sample(5), out.data()).is_ok());
  EXPECT_EQ(out, image);
}

// Huge amounts saturate: every value ends 0 or 255, none cast from a NaN (UBSan checks the
// casts in the asan stage; found by fuzz/op_call_fuzz.cc).
TEST(ColorJitterTest, HugeAmountsSaturateWithoutANaN) {
  for (int64_t index = 0; index < 8; ++index) {
    std::vector<uint8_t> out = pixels(3 * 64, 0, 7);
    out[0] = out[64] = out[128] = 0;
    ASSERT_TRUE(
        jitter({1e300, 1e300, 1e300, 0}, {3, 8, 8})->apply(sample(index), out.data()).is_ok());
    for (uint8_t v : out) EXPECT_TRUE(v == 0 || v == 255) << int(v);
  }
}

TEST(ColorJitterTest, ImagesOfOneOrThreeChannelsOnly) {
  const OpCall call = make_op_call("color_jitter", {{"brightness", 0.1}}).value();
  EXPECT_EQ(call.op->make_pixel(call.params, {"image", {28, 28}}).status().message(),
            "field 'image': color_jitter needs images [1 or 3, H, W], not [28, 28]");
  EXPECT_FALSE(call.op->make_pixel(call.params, {"image", {2, 4, 4}}).is_ok());
}

TEST(ColorJitterTest, ParametersOutOfBoundsAreOneLineErrors) {
  const auto error = [](const std::string& name, double value) {
    return make_op_call("color_jitter", {{name, value}}).status().message();
  };
  EXPECT_EQ(error("contrast", -0.5),
            "color_jitter: contrast must be a number at least 0, not -0.5");
  EXPECT_EQ(error("saturation", -1),
            "color_jitter: saturation must be a number at least 0, not -1");
  EXPECT_EQ(error("hue", 0.6), "color_jitter: hue must be a number in [0, 0.5], not 0.6");
  EXPECT_EQ(error("hue", -0.1), "color_jitter: hue must be a number in [0, 0.5], not -0.1");
  EXPECT_TRUE(make_op_call("color_jitter", {{"saturation", 100.0}, {"hue", 0.5}}).is_ok());
  EXPECT_TRUE(make_op_call("color_jitter", {{"hue", 0.0}}).is_ok());
}

}  // namespace
}  // namespace stoker
