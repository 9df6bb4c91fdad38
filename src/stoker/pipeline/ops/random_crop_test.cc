// random_crop against torchvision's RandomCrop on PIL images (v1's forward: F.pad, pad_if_needed's
// second F.pad, F.crop; with pad_once v2's: one F.pad) with get_params (v2: torch.randint)
// answering the place the operation draws: each padding mode and form, crops of the image's
// size, smaller and larger, 1 and 3 channels, byte for byte; bad parameters are one line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr const char* kRandomCropReference = R"(
import json, sys
import numpy as np
import PIL.Image
import torch
import torchvision.transforms as T
import torchvision.transforms.v2 as T2
from torchvision.transforms.v2 import _geometry as G2
real_torch = G2.torch
class Torch:  # v2's module torch, its randint answering the drawn place
    queue = []
    def randint(self, *args, **kwargs): return real_torch.tensor(self.queue.pop(0))
    def __getattr__(self, name): return getattr(real_torch, name)
G2.torch = Torch()
d = sys.argv[1]
with open(d + "/out", "wb") as out:
    for case in json.load(open(d + "/cases.json")):
        c, h, w = case["shape"]
        x = np.fromfile(d + "/in", dtype=np.uint8)[:c * h * w].reshape(c, h, w)
        image = PIL.Image.fromarray(x[0] if c == 1 else x.transpose(1, 2, 0))
        v2 = case["pad_once"]
        crop = (T2 if v2 else T).RandomCrop(case["size"], padding=case["padding"],
                                             pad_if_needed=case["pad_if_needed"],
                                             fill=case["fill"], padding_mode=case["mode"])
        drawn = (case["top"], case["left"])
        if v2:  # make_params draws where the padded image is larger than the crop
            Torch.queue = [p for p, n, s in zip(drawn, (case["rows"], case["columns"]),
                                                 case["size"]) if n > s]
        def place(img, size):
            width, height = img.size
            assert case["rows"] == height and case["columns"] == width, (img.size, case)
            return drawn[0], drawn[1], size[0], size[1]
        if not v2:
            crop.get_params = place
        y = np.asarray(crop(image))
        assert not Torch.queue, Torch.queue
        y = y[None] if y.ndim == 2 else y.transpose(2, 0, 1)
        out.write(np.ascontiguousarray(y).tobytes())
)";

SampleInput random_crop_sample(int64_t index) {
  SampleInput input;
  input.index = index;
  input.seed = 21;
  input.step = 1;
  return input;
}

struct RandomCropCase {
  int channels;
  std::vector<int> size;  // empty: the image's
  std::vector<int> padding;
  bool pad_if_needed;
};

TEST(RandomCropTest, IsTorchvisionsRandomCropOnPilForTheSameDraws) {
  constexpr int64_t kHeight = 9, kWidth = 14;
  std::vector<uint8_t> image(3 * kHeight * kWidth);
  CounterRng noise(6, 0);
  for (uint8_t& v : image) v = static_cast<uint8_t>(noise.uniform_below(256));
  testing::TempDir dir;
  std::ofstream(dir / "in", std::ios::binary)
      .write(reinterpret_cast<const char*>(image.data()),
             static_cast<std::streamsize>(image.size()));
  const std::vector<RandomCropCase> crops = {
      {3, {}, {4}, false},       {3, {}, {2, 3}, false},   {3, {}, {1, 2, 3, 4}, false},
      {3, {}, {0}, false},       {3, {5, 8}, {0}, false},  {3, {6}, {1, 2}, false},
      {3, {12, 17}, {2}, false}, {3, {16, 25}, {0}, true}, {3, {13, 21}, {1, 0, 2, 3}, true},
      {1, {7, 30}, {2}, true},   {1, {4, 4}, {0}, true},   {3, {9, 14}, {0}, false},
  };
  nlohmann::json cases = nlohmann::json::array();
  std::vector<uint8_t> ours;
  for (const bool once : {false, true})
    for (const char* mode : {"constant", "edge", "reflect", "symmetric"}) {
      for (const RandomCropCase& crop : crops) {
        if (once && !crop.pad_if_needed) continue;  // v2's then v1's
        const std::vector<int64_t> shape = {crop.channels, kHeight, kWidth};
        // torchvision's constant fill on PIL: one value, or one per channel as a tuple.
        const std::vector<double> fill =
            crop.channels == 3 ? std::vector<double>{7, 8, 9} : std::vector<double>{8};
        for (int64_t index = 0; index < 3; ++index) {
          const OpCall call =
              make_op_call(
                  "random_crop",
                  {{"size", std::vector<double>(crop.size.begin(), crop.size.end())},
                   {"padding", std::vector<double>(crop.padding.begin(), crop.padding.end())},
                   {"pad_if_needed", crop.pad_if_needed},
                   {"pad_once", once},
                   {"fill", fill},
                   {"padding_mode", std::string(mode)}})
                  .value();
          const Result<std::shared_ptr<const PixelOp>> made =
              call.op->make_pixel(call.params, {"image", shape});
          if (once && !made.is_ok() && std::string(mode) == "reflect") {  // one pad of 14 on 14
            EXPECT_EQ(made.status().message(),
                      "field 'image': random_crop: reflect padding must be smaller than the image");
            continue;
          }
          ASSERT_TRUE(made.is_ok()) << made.status().message();
          const std::shared_ptr<const PixelOp> op = made.value();
          const auto& resizing = dynamic_cast<const ResizingPixelOp&>(*op);
          const std::vector<int64_t>& out_shape = resizing.output_shape();
          std::vector<uint8_t> out(static_cast<size_t>(out_shape[0] * out_shape[1] * out_shape[2]));
          ASSERT_TRUE(
              resizing.apply_to(random_crop_sample(index), image.data(), out.data()).is_ok());
          if (out_shape == shape) {  // in place too (a combinator's)
            std::vector<uint8_t> in_place(image.begin(), image.begin() + out.size());
            ASSERT_TRUE(op->apply(random_crop_sample(index), in_place.data()).is_ok());
            EXPECT_EQ(in_place, out);
          }
          ours.insert(ours.end(), out.begin(), out.end());
          // The place drawn: rows then columns, each over the padded image's extra length.
          const int left = crop.padding[0];
          const int top = crop.padding.size() == 1 ? crop.padding[0] : crop.padding[1];
          const int right = crop.padding.size() == 4 ? crop.padding[2] : left;
          const int bottom = crop.padding.size() == 4 ? crop.padding[3] : top;
          int rows = static_cast<int>(kHeight) + top + bottom;
          int columns = static_cast<int>(kWidth) + left + right;
          const int crop_rows = crop.size.empty() ? static_cast<int>(kHeight) : crop.size.front();
          const int crop_columns = crop.size.empty() ? static_cast<int>(kWidth) : crop.size.back();
          if (crop.pad_if_needed) {
            columns += 2 * std::max(0, crop_columns - columns);
            rows += 2 * std::max(0, crop_rows - rows);
          }
          CounterRng rng = random_crop_sample(index).rng();
          const auto row = rng.uniform_below(static_cast<uint64_t>(rows - crop_rows + 1));
          const auto column = rng.uniform_below(static_cast<uint64_t>(columns - crop_columns + 1));
          cases.push_back(
              {{"shape", shape},
               {"size", crop.size.empty()
                            ? std::vector<int>{static_cast<int>(kHeight), static_cast<int>(kWidth)}
                            : crop.size},
               {"padding", crop.padding},
               {"pad_if_needed", crop.pad_if_needed},
               {"pad_once", once},
               {"fill", crop.channels == 3 ? nlohmann::json({7, 8, 9}) : nlohmann::json(8)},
               {"mode", mode},
               {"rows", rows},
               {"columns", columns},
               {"top", row},
               {"left", column}});
        }
      }
    }
  std::ofstream(dir / "cases.json") << cases.dump();
  std::ofstream(dir / "crop.py") << kRandomCropReference;
  ASSERT_EQ(
      std::system((stoker::testing::reference_python() + " " + (dir / "crop.py") + " " + dir.path())
                      .c_str()),
      0);
  std::ifstream in(dir / "out", std::ios::binary);
  const std::vector<uint8_t> theirs{std::istreambuf_iterator<char>(in), {}};
  ASSERT_EQ(theirs.size(), ours.size());
  size_t at = 0;
  for (const nlohmann::json& c : cases) {
    const std::vector<int> size = c["size"];
    const size_t n = static_cast<size_t>(c["shape"][0].get<int>() * size.front() * size.back());
    EXPECT_TRUE(std::equal(ours.begin() + at, ours.begin() + at + n, theirs.begin() + at))
        << c.dump();
    at += n;
  }
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
  EXPECT_EQ(error("random_crop:size=[10,13]"),
            "field 'image': random_crop: the crop 10 x 13 is larger than the padded image 9 x 14 "
            "(pad_if_needed pads it)");
  EXPECT_EQ(error("random_crop:size=[9,13.5]"),
            "field 'image': random_crop: size 13.5 is not a whole number");
  EXPECT_EQ(error("random_crop:size=30,pad_if_needed=true,padding_mode=reflect"),
            "field 'image': random_crop: reflect padding must be smaller than the image");
  EXPECT_TRUE(error("random_crop:size=[10,13],pad_if_needed=true").empty());
  EXPECT_TRUE(error("random_crop:size=[9,14],padding=4").empty());
  EXPECT_EQ(error("random_crop:padding_mode=wrap"),
            "random_crop: padding_mode must be one of constant, edge, reflect, symmetric, not "
            "'wrap'");
}

}  // namespace
}  // namespace stoker
