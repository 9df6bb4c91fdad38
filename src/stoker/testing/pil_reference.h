#pragma once
// Test helper of the operations that equal a torchvision function on a PIL image
// (random_posterize, random_equalize, ...): the same images through the operation and through
// torchvision.transforms.v2.functional on PIL images (STOKER_PYTHON), pixel for pixel.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker::pil_reference {

struct TestImage {
  std::vector<int64_t> shape;  // [C, H, W]
  std::vector<uint8_t> pixels;
};

// For each call of argv[2] (a JSON list of Python expressions of `image`, e.g.
// "F.posterize(image, 3)") and each image of argv[1]/*.in as a PIL image ("L" or "RGB"): the
// call's result written back [C, H, W] to argv[1]/CALL-IMAGE.out.
constexpr const char* kReferenceScript = R"(
import json, sys
import numpy as np
import PIL.Image
from torchvision.transforms.v2 import functional as F
shapes = json.load(open(sys.argv[1] + "/shapes.json"))
for k, call in enumerate(json.loads(sys.argv[2])):
    for i, shape in enumerate(shapes):
        x = np.fromfile(f"{sys.argv[1]}/{i}.in", dtype=np.uint8).reshape(shape)
        image = PIL.Image.fromarray(x[0] if shape[0] == 1 else x.transpose(1, 2, 0))
        out = eval(call)
        assert out.mode == image.mode and out.size == image.size, (out.mode, out.size)
        y = np.asarray(out)
        y = y[None] if y.ndim == 2 else y.transpose(2, 0, 1)
        np.ascontiguousarray(y).tofile(f"{sys.argv[1]}/{k}-{i}.out")
)";

// Images whose histograms take every branch of the table operations: noise over the whole
// range, a narrow band (low contrast), two values, one value, values crowded at the dark end,
// channels of different ranges; 1 and 3 channels; small images (fewer than 255 pixels, sides
// under 3).
inline std::vector<TestImage> test_images() {
  std::vector<TestImage> images;
  CounterRng rng(2024, 0);
  for (int64_t channels : {3, 1}) {
    for (int kind = 0; kind < 6; ++kind) {
      for (int copy = 0; copy < 2; ++copy) {
        TestImage image{{channels, 37, 29}, std::vector<uint8_t>(channels * 37 * 29)};
        const int base = static_cast<int>(rng.uniform_below(200));
        const int width = 1 + static_cast<int>(rng.uniform_below(40));
        const uint8_t other = static_cast<uint8_t>(rng.uniform_below(256));
        for (size_t i = 0; i < image.pixels.size(); ++i) {
          const int u = static_cast<int>(rng.uniform_below(256));
          const size_t channel = i / (37 * 29);
          int value = u;
          if (kind == 1) value = base + u % width;
          if (kind == 2) value = u < 128 ? base : other;
          if (kind == 3) value = base;
          if (kind == 4) value = u * u / 255 * u / 255;
          if (kind == 5) value = static_cast<int>(channel * 60) + u % (30 + 70 * channel);
          image.pixels[i] = static_cast<uint8_t>(value);
        }
        images.push_back(std::move(image));
      }
    }
  }
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
           {3, 5, 4}, {1, 1, 7}, {3, 2, 2}, {1, 3, 3}, {3, 16, 17}, {1, 9, 2}}) {
    TestImage image{shape, std::vector<uint8_t>(shape[0] * shape[1] * shape[2])};
    for (uint8_t& x : image.pixels) x = static_cast<uint8_t>(rng.uniform_below(256));
    images.push_back(std::move(image));
  }
  return images;
}

// Writes `images` into `dir` as the reference scripts read them: I.in (the pixels [C, H, W]) and
// shapes.json (every image's shape).
inline void write_test_images(const stoker::testing::TempDir& dir,
                              const std::vector<TestImage>& images) {
  nlohmann::json shapes = nlohmann::json::array();
  for (size_t i = 0; i < images.size(); ++i) {
    shapes.push_back(images[i].shape);
    std::ofstream(dir / (std::to_string(i) + ".in"), std::ios::binary)
        .write(reinterpret_cast<const char*>(images[i].pixels.data()),
               static_cast<std::streamsize>(images[i].pixels.size()));
  }
  std::ofstream(dir / "shapes.json") << shapes.dump();
}

// torchvision's answer for each call (Python, of the PIL image `image`) and each image.
inline std::vector<std::vector<std::vector<uint8_t>>> reference_pixels(
    const std::vector<TestImage>& images, const std::vector<std::string>& calls) {
  stoker::testing::TempDir dir;
  write_test_images(dir, images);
  std::ofstream(dir / "reference.py") << kReferenceScript;
  const std::string command = stoker::testing::reference_python() + " " + (dir / "reference.py") +
                              " " + dir.path() + " '" + nlohmann::json(calls).dump() + "'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<std::vector<std::vector<uint8_t>>> out(calls.size());
  for (size_t k = 0; k < calls.size(); ++k) {
    for (size_t i = 0; i < images.size(); ++i) {
      std::ifstream in(dir / (std::to_string(k) + "-" + std::to_string(i) + ".out"),
                       std::ios::binary);
      out[k].emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  return out;
}

inline std::shared_ptr<const PixelOp> make_pixel_op(
    const std::string& name, const std::vector<std::pair<std::string, ParamValue>>& given,
    const std::vector<int64_t>& shape) {
  const OpCall call = make_op_call(name, given).value();
  return call.op->make_pixel(call.params, {"image", shape}).value();
}

inline SampleInput op_sample(int64_t index) {
  SampleInput input;
  input.index = index;
  input.epoch = 1;
  input.seed = 17;
  input.step = 1;
  return input;
}

// A call of an operation and torchvision's call of the same (Python, of the PIL image `image`).
struct ReferenceCase {
  std::vector<std::pair<std::string, ParamValue>> given;  // all but p
  std::string torchvision;
};

// Operation `name` as each case gives it, with p at 0.5, 0 and 1, on test_images():
// torchvision's call where the sample's draw (next_double() < p) says so, unchanged elsewhere,
// pixel for pixel. torchvision's calls change most images (the test is not vacuous).
inline void expect_torchvision_pixels(const std::string& name,
                                      const std::vector<ReferenceCase>& cases) {
  const std::vector<TestImage> images = test_images();
  std::vector<std::string> calls;
  for (const ReferenceCase& c : cases) calls.push_back(c.torchvision);
  const std::vector<std::vector<std::vector<uint8_t>>> reference = reference_pixels(images, calls);
  size_t changed_by_torchvision = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    for (size_t i = 0; i < images.size(); ++i) {
      ASSERT_EQ(reference[k][i].size(), images[i].pixels.size()) << calls[k] << " image " << i;
      changed_by_torchvision += reference[k][i] != images[i].pixels;
    }
  }
  EXPECT_GT(changed_by_torchvision, cases.size() * images.size() / 2);
  for (size_t k = 0; k < cases.size(); ++k) {
    std::vector<std::pair<std::string, ParamValue>> given = cases[k].given;
    for (double p : {0.5, 0.0, 1.0}) {
      given.emplace_back("p", p);
      int applied = 0;
      for (size_t i = 0; i < images.size(); ++i) {
        const SampleInput sample = op_sample(static_cast<int64_t>(i));
        std::vector<uint8_t> pixels = images[i].pixels;
        ASSERT_TRUE(
            make_pixel_op(name, given, images[i].shape)->apply(sample, pixels.data()).is_ok());
        const bool drawn = sample.rng().next_double() < p;
        applied += drawn;
        const std::vector<uint8_t>& want = drawn ? reference[k][i] : images[i].pixels;
        const auto [mine, theirs] = std::mismatch(pixels.begin(), pixels.end(), want.begin());
        EXPECT_TRUE(mine == pixels.end())
            << calls[k] << " p=" << p << " image " << i << ": at " << (mine - pixels.begin()) << " "
            << static_cast<int>(*mine) << ", torchvision " << static_cast<int>(*theirs)
            << (drawn ? "" : " (not drawn: the input)");
      }
      if (p == 0.5) {
        EXPECT_GT(applied, 5);
        EXPECT_LT(applied, static_cast<int>(images.size()) - 5);
      } else {
        EXPECT_EQ(applied, p == 1.0 ? static_cast<int>(images.size()) : 0);
      }
      given.pop_back();
    }
  }
}

// The one-line error of a call with `given`.
inline std::string call_error(const std::string& name,
                              const std::vector<std::pair<std::string, ParamValue>>& given) {
  const Result<OpCall> call = make_op_call(name, given);
  EXPECT_FALSE(call.is_ok());
  return call.is_ok() ? "" : call.status().message();
}

}  // namespace stoker::pil_reference
