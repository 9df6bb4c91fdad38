// random_crop against torchvision: the image padded by torchvision's F.pad (each mode, each
// padding form) and cut by F.crop at the place the operation draws, byte for byte; bad
// parameters are one line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr const char* kRandomCropReference = R"(
import json, sys
import numpy as np
import torch
from torchvision.transforms.v2 import functional as F
d = sys.argv[1]
x = torch.from_numpy(np.fromfile(d + "/in", dtype=np.uint8).reshape(3, 9, 14))
out = []
for case in json.load(open(d + "/cases.json")):
    padded = F.pad(x, case["padding"], fill=case["fill"], padding_mode=case["mode"])
    out.append(F.crop(padded, case["top"], case["left"], 9, 14).numpy())
np.stack(out).tofile(d + "/out")
)";

SampleInput random_crop_sample(int64_t index) {
  SampleInput input;
  input.index = index;
  input.seed = 21;
  input.step = 1;
  return input;
}

TEST(RandomCropTest, EachModeAndPaddingIsTorchvisionsPadThenCrop) {
  constexpr size_t kBytes = 3 * 9 * 14;
  std::vector<uint8_t> image(kBytes);
  CounterRng noise(6, 0);
  for (uint8_t& v : image) v = static_cast<uint8_t>(noise.uniform_below(256));
  testing::TempDir dir;
  std::ofstream(dir / "in", std::ios::binary)
      .write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(kBytes));
  nlohmann::json cases = nlohmann::json::array();
  std::vector<std::vector<uint8_t>> ours;
  const std::vector<std::vector<int>> paddings = {{4}, {2, 3}, {1, 2, 3, 4}, {0}};
  for (const char* mode : {"constant", "edge", "reflect", "symmetric"}) {
    for (const std::vector<int>& padding : paddings) {
      for (int64_t index = 0; index < 6; ++index) {
        std::vector<double> pad(padding.begin(), padding.end());
        const OpCall call = make_op_call("random_crop", {{"padding", pad},
                                                         {"fill", std::vector<double>{7, 8, 9}},
                                                         {"padding_mode", std::string(mode)}})
                                .value();
        const auto op = call.op->make_pixel(call.params, {"image", {3, 9, 14}}).value();
        std::vector<uint8_t> out = image;
        ASSERT_TRUE(op->apply(random_crop_sample(index), out.data()).is_ok());
        ours.push_back(out);
        // The place drawn: rows then columns, each over the padding's two sides.
        const int left = padding[0];
        const int top = padding.size() == 1 ? padding[0] : padding[1];
        const int right = padding.size() == 4 ? padding[2] : left;
        const int bottom = padding.size() == 4 ? padding[3] : top;
        CounterRng rng = random_crop_sample(index).rng();
        const auto row = rng.uniform_below(static_cast<uint64_t>(top + bottom + 1));
        const auto column = rng.uniform_below(static_cast<uint64_t>(left + right + 1));
        cases.push_back({{"padding", padding},
                         {"fill", std::string(mode) == "constant" ? 8 : 0},
                         {"mode", mode},
                         {"top", row},
                         {"left", column}});
      }
    }
  }
  // torchvision's constant fill is one value: compare constant padding with fill 8 everywhere.
  for (size_t k = 0; k < cases.size(); ++k) {
    if (cases[k]["mode"] != "constant") continue;
    const std::vector<double> pad(cases[k]["padding"].begin(), cases[k]["padding"].end());
    const OpCall call =
        make_op_call("random_crop", {{"padding", pad}, {"fill", std::vector<double>{8}}}).value();
    ours[k] = image;
    ASSERT_TRUE(call.op->make_pixel(call.params, {"image", {3, 9, 14}})
                    .value()
                    ->apply(random_crop_sample(static_cast<int64_t>(k % 6)), ours[k].data())
                    .is_ok());
  }
  std::ofstream(dir / "cases.json") << cases.dump();
  std::ofstream(dir / "crop.py") << kRandomCropReference;
  ASSERT_EQ(std::system(
                (std::string(STOKER_PYTHON) + " " + (dir / "crop.py") + " " + dir.path()).c_str()),
            0);
  std::ifstream in(dir / "out", std::ios::binary);
  const std::vector<uint8_t> theirs{std::istreambuf_iterator<char>(in), {}};
  ASSERT_EQ(theirs.size(), ours.size() * kBytes);
  for (size_t k = 0; k < ours.size(); ++k)
    EXPECT_TRUE(std::equal(ours[k].begin(), ours[k].end(), theirs.begin() + k * kBytes))
        << cases[k].dump();
}

TEST(RandomCropTest, BadParametersAreOneLine) {
  const auto error = [](const std::string& text) {
    const Result<OpCall> call = parse_op_call(text);
    if (!call.is_ok()) return call.status().message();
    return call.value()
        .op->make_pixel(call.value().params, {"image", {3, 9, 14}})
        .status()
        .message();
  };
  EXPECT_EQ(error("random_crop:padding=[1,2,3]"),
            "field 'image': random_crop: padding has 1, 2 or 4 values, not 3");
  EXPECT_EQ(error("random_crop:padding=1.5"),
            "field 'image': random_crop: padding 1.5 is not a whole number");
  EXPECT_EQ(error("random_crop:padding=9,padding_mode=reflect"),
            "field 'image': random_crop: reflect padding must be smaller than the image");
  EXPECT_EQ(error("random_crop:fill=[1,2]"),
            "field 'image': random_crop: fill has 2 numbers; give one or one per channel (3)");
  EXPECT_EQ(error("random_crop:size=[9,13],padding=4"),
            "field 'image': random_crop: crops to the image's own size (9 x 14) only, not 9 x 13");
  EXPECT_TRUE(error("random_crop:size=[9,14],padding=4").empty());
  EXPECT_EQ(error("random_crop:padding_mode=wrap"),
            "random_crop: padding_mode must be one of constant, edge, reflect, symmetric, not "
            "'wrap'");
}

}  // namespace
}  // namespace stoker
