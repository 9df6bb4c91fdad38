// random_horizontal_flip and random_vertical_flip against torchvision's hflip and vflip: the
// images their draws flip are torchvision's flips byte for byte, the others unchanged.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr const char* kFlipReference = R"(
import sys
import numpy as np
import torch
from torchvision.transforms.v2 import functional as F
x = torch.from_numpy(np.fromfile(sys.argv[1], dtype=np.uint8).reshape(-1, 3, 9, 14))
F.horizontal_flip(x).numpy().tofile(sys.argv[2])
F.vertical_flip(x).numpy().tofile(sys.argv[3])
)";

std::vector<uint8_t> flip_reference_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(RandomFlipTest, FlippedWhereDrawnAsTorchvisionsFlips) {
  constexpr size_t kImages = 30, kBytes = 3 * 9 * 14;
  std::vector<uint8_t> images(kImages * kBytes);
  CounterRng noise(4, 0);
  for (uint8_t& x : images) x = static_cast<uint8_t>(noise.uniform_below(256));
  testing::TempDir dir;
  std::ofstream(dir / "in", std::ios::binary)
      .write(reinterpret_cast<const char*>(images.data()),
             static_cast<std::streamsize>(images.size()));
  std::ofstream(dir / "flip.py") << kFlipReference;
  ASSERT_EQ(std::system((stoker::testing::reference_python() + " " + (dir / "flip.py") + " " +
                         (dir / "in") + " " + (dir / "h") + " " + (dir / "v"))
                            .c_str()),
            0);
  for (const auto& [name, reference] :
       {std::pair{"random_horizontal_flip", "h"}, std::pair{"random_vertical_flip", "v"}}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> flipped = flip_reference_bytes(dir / reference);
    ASSERT_EQ(flipped.size(), images.size());
    const OpCall call = make_op_call(name, {{"p", 0.5}}).value();
    const auto op = call.op->make_pixel(call.params, {"image", {3, 9, 14}}).value();
    int drawn_flips = 0;
    for (size_t i = 0; i < kImages; ++i) {
      SampleInput input;
      input.index = static_cast<int64_t>(i);
      input.seed = 8;
      input.step = 1;
      std::vector<uint8_t> image(images.begin() + i * kBytes, images.begin() + (i + 1) * kBytes);
      ASSERT_TRUE(op->apply(input, image.data()).is_ok());
      const bool flip = input.rng().next_double() < 0.5;
      drawn_flips += flip;
      EXPECT_TRUE(
          std::equal(image.begin(), image.end(), (flip ? flipped : images).begin() + i * kBytes))
          << "image " << i;
    }
    EXPECT_GT(drawn_flips, 5);
    EXPECT_LT(drawn_flips, 25);
  }
}

TEST(RandomFlipTest, AnImageOfAnotherShapeIsRefusedInOneLine) {
  const OpCall call = make_op_call("random_vertical_flip", {}).value();
  EXPECT_EQ(call.op->make_pixel(call.params, {"pixels", {28, 28}}).status().message(),
            "field 'pixels': random_vertical_flip needs images [C, H, W], not 2 dimensions");
}

}  // namespace
}  // namespace stoker
