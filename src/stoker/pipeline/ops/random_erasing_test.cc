// random_erasing against torchvision: the rectangles it draws erased by
// torchvision.transforms.v2.functional.erase give its pixels exactly; its rectangles are drawn as
// torchvision's RandomErasing draws them (the same distribution of sides, measured on both);
// fill=random draws N(0, 1); bad parameters are one line.
#include "stoker/pipeline/ops/random_erasing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr int64_t kC = 3, kH = 23, kW = 31;

std::shared_ptr<const FloatOp> erasing(const std::string& text,
                                       const std::vector<int64_t>& shape = {kC, kH, kW}) {
  const OpCall call = parse_op_call(text).value();
  return call.op->make_float(call.params, {"image", shape}).value();
}

SampleInput erasing_sample(int64_t index) {
  SampleInput input;
  input.index = index;
  input.seed = 3;
  input.step = 2;
  return input;
}

std::vector<float> float_noise(size_t n, uint64_t seed) {
  CounterRng rng(seed, 0);
  std::vector<float> out(n);
  for (float& x : out) x = rng.next_float() * 4 - 2;
  return out;
}

// Runs `script` with STOKER_PYTHON in `dir`; its standard output.
std::string run_erasing_reference(const testing::TempDir& dir, const std::string& script) {
  std::ofstream(dir / "script.py") << script;
  const std::string out = dir / "out.txt";
  EXPECT_EQ(std::system((stoker::testing::reference_python() + " " + (dir / "script.py") + " " +
                         dir.path() + " > " + out)
                            .c_str()),
            0);
  std::ifstream in(out);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(RandomErasingTest, ErasedPixelsAreTorchvisionsEraseOfTheDrawnRectangle) {
  constexpr int kImages = 40;
  const size_t n = kC * kH * kW;
  const std::vector<float> images = float_noise(n * kImages, 9);
  testing::TempDir dir;
  std::ofstream(dir / "in", std::ios::binary)
      .write(reinterpret_cast<const char*>(images.data()),
             static_cast<std::streamsize>(images.size() * sizeof(float)));
  std::ofstream boxes(dir / "boxes");
  std::vector<float> erased = images;
  const auto op = erasing("random_erasing:p=0.7,value=[0.5,-1,2]");
  int applied = 0;
  for (int i = 0; i < kImages; ++i) {
    ASSERT_TRUE(op->apply(erasing_sample(i), erased.data() + i * n).is_ok());
    CounterRng rng = erasing_sample(i).rng();
    const bool erase = rng.next_double() < 0.7;
    const ops::EraseBox box = ops::draw_erase_box(rng, kH, kW, 0.02, 0.33, 0.3, 3.3);
    applied += erase && box.found;
    boxes << (erase && box.found) << " " << box.top << " " << box.left << " " << box.height << " "
          << box.width << "\n";
  }
  boxes.close();
  EXPECT_GT(applied, 10);
  EXPECT_LT(applied, kImages - 5);
  run_erasing_reference(dir, R"(
import sys, numpy as np, torch
from torchvision.transforms.v2 import functional as F
d = sys.argv[1]
x = torch.from_numpy(np.fromfile(d + "/in", dtype=np.float32).reshape(-1, 3, 23, 31))
v = torch.tensor([0.5, -1.0, 2.0])[:, None, None]
for k, line in enumerate(open(d + "/boxes")):
    erase, i, j, h, w = map(int, line.split())
    if erase:
        x[k] = F.erase(x[k], i, j, h, w, v)
x.numpy().tofile(d + "/expected")
)");
  std::ifstream in(dir / "expected", std::ios::binary);
  std::vector<float> expected(images.size());
  in.read(reinterpret_cast<char*>(expected.data()),
          static_cast<std::streamsize>(expected.size() * sizeof(float)));
  ASSERT_TRUE(in.good());
  for (int i = 0; i < kImages; ++i)
    EXPECT_TRUE(
        std::equal(erased.begin() + i * n, erased.begin() + (i + 1) * n, expected.begin() + i * n))
        << "image " << i;
}

TEST(RandomErasingTest, RectanglesAreDistributedAsTorchvisionsDraws) {
  // Mean height, mean width and how often no rectangle fits, over 6,000 draws each, for a
  // 32 x 48 image and a scale that often does not fit: stoker's against torchvision's own
  // RandomErasing.make_params (seeded; _get_params before torchvision 0.21).
  constexpr int kDraws = 6000;
  double sum_h = 0, sum_w = 0, misses = 0;
  for (int i = 0; i < kDraws; ++i) {
    CounterRng rng(17, static_cast<uint64_t>(i));
    const ops::EraseBox box = ops::draw_erase_box(rng, 32, 48, 0.1, 0.9, 0.2, 4.0);
    if (!box.found) {
      ++misses;
      continue;
    }
    ASSERT_GE(box.top, 0);
    ASSERT_LE(box.top + box.height, 32);
    ASSERT_LE(box.left + box.width, 48);
    sum_h += static_cast<double>(box.height);
    sum_w += static_cast<double>(box.width);
  }
  const double found = kDraws - misses;
  testing::TempDir dir;
  std::istringstream theirs(run_erasing_reference(dir, R"(
import torch
from torchvision.transforms import v2
torch.manual_seed(0)
t = v2.RandomErasing(p=1, scale=(0.1, 0.9), ratio=(0.2, 4.0))
image = torch.zeros(3, 32, 48)
make_params = getattr(t, "make_params", None) or t._get_params  # the name before 0.21
h = w = found = 0
for _ in range(6000):
    p = make_params([image])
    if p["v"] is not None:
        found += 1; h += p["h"]; w += p["w"]
print(h / found, w / found, 6000 - found)
)"));
  double their_h = 0, their_w = 0, their_misses = 0;
  theirs >> their_h >> their_w >> their_misses;
  ASSERT_GT(their_h, 0);
  EXPECT_NEAR(sum_h / found, their_h, 0.4);
  EXPECT_NEAR(sum_w / found, their_w, 0.5);
  EXPECT_NEAR(misses / kDraws, their_misses / kDraws, 0.03);
}

TEST(RandomErasingTest, RandomFillDrawsStandardNormalValuesInsideTheRectangleOnly) {
  const size_t n = kC * kH * kW;
  double sum = 0, squares = 0, count = 0;
  for (int i = 0; i < 200; ++i) {
    const std::vector<float> before = float_noise(n, 100 + i);
    std::vector<float> image = before;
    ASSERT_TRUE(
        erasing("random_erasing:p=1,fill=random")->apply(erasing_sample(i), image.data()).is_ok());
    CounterRng rng = erasing_sample(i).rng();
    rng.next_double();
    const ops::EraseBox box = ops::draw_erase_box(rng, kH, kW, 0.02, 0.33, 0.3, 3.3);
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t y = 0; y < kH; ++y)
        for (int64_t x = 0; x < kW; ++x) {
          const size_t at = static_cast<size_t>((c * kH + y) * kW + x);
          const bool inside = box.found && y >= box.top && y < box.top + box.height &&
                              x >= box.left && x < box.left + box.width;
          if (!inside) {
            ASSERT_EQ(image[at], before[at]) << "image " << i;
            continue;
          }
          sum += image[at];
          squares += image[at] * image[at];
          ++count;
        }
  }
  ASSERT_GT(count, 10000);
  const double mean = sum / count;
  EXPECT_NEAR(mean, 0, 0.03);
  EXPECT_NEAR(std::sqrt(squares / count - mean * mean), 1, 0.03);
}

TEST(RandomErasingTest, PZeroLeavesEveryImageAndBadParametersAreOneLine) {
  const size_t n = kC * kH * kW;
  const std::vector<float> before = float_noise(n, 1);
  std::vector<float> image = before;
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(erasing("random_erasing:p=0")->apply(erasing_sample(i), image.data()).is_ok());
  EXPECT_EQ(image, before);

  const OpCall two = parse_op_call("random_erasing:value=[1,2]").value();
  EXPECT_EQ(two.op->make_float(two.params, {"image", {kC, kH, kW}}).status().message(),
            "field 'image': random_erasing: value has 2 numbers; give one or one per channel (3)");
  const OpCall reversed = parse_op_call("random_erasing:scale=[0.5,0.1]").value();
  EXPECT_EQ(reversed.op->make_float(reversed.params, {"image", {kC, kH, kW}}).status().message(),
            "field 'image': random_erasing: scale must be (min, max)");
  EXPECT_EQ(parse_op_call("random_erasing:p=1.5").status().message(),
            "random_erasing: p must be a number in [0, 1], not 1.5");
  // Ratios past float32's range give no rectangle, never an overflowing cast (fuzz finding).
  std::vector<float> wide = before;
  ASSERT_TRUE(erasing("random_erasing:p=1,ratio=[1e39,1e40]")
                  ->apply(erasing_sample(0), wide.data())
                  .is_ok());
  EXPECT_EQ(wide, before);
  EXPECT_EQ(parse_op_call("random_erasing:fill=noise").status().message(),
            "random_erasing: fill must be one of value, random, not 'noise'");
}

}  // namespace
}  // namespace stoker
