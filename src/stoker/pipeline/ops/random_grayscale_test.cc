// random_grayscale against torchvision: the same images through
// torchvision.transforms.v2.functional.rgb_to_grayscale (STOKER_PYTHON) where the sample's draw
// says grey, pixel for pixel (on uint8 tensors, and with backend=pil on PIL images); unchanged
// where it does not.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr const char* kGrayscaleReference = R"(
import sys
import numpy as np
import torch
from PIL import Image
from torchvision.transforms.v2 import functional as F
x = np.fromfile(sys.argv[1], dtype=np.uint8).reshape(-1, 3, 37, 29)
if sys.argv[3] == "pil":
    grey = [np.asarray(F.rgb_to_grayscale(Image.fromarray(i.transpose(1, 2, 0)), 3)) for i in x]
    np.stack(grey).transpose(0, 3, 1, 2).copy().tofile(sys.argv[2])
else:
    F.rgb_to_grayscale(torch.from_numpy(x), num_output_channels=3).numpy().tofile(sys.argv[2])
)";

std::shared_ptr<const PixelOp> grayscale(double p, const std::vector<int64_t>& shape,
                                         const std::string& backend = "tensor") {
  const OpCall call = make_op_call("random_grayscale", {{"p", p}, {"backend", backend}}).value();
  return call.op->make_pixel(call.params, {"image", shape}).value();
}

SampleInput grayscale_sample(int64_t index) {
  SampleInput input;
  input.index = index;
  input.seed = 11;
  input.step = 1;
  return input;
}

std::vector<uint8_t> noise(size_t n, uint64_t seed) {
  CounterRng rng(seed, 0);
  std::vector<uint8_t> out(n);
  for (uint8_t& x : out) x = static_cast<uint8_t>(rng.uniform_below(256));
  return out;
}

// random_grayscale with `backend` against torchvision's rgb_to_grayscale on that backend.
void expect_torchvisions_grey(const std::string& backend) {
  const std::vector<int64_t> shape = {3, 37, 29};
  const size_t n = 3 * 37 * 29;
  constexpr int kImages = 40;
  const std::vector<uint8_t> images = noise(n * kImages, 5);
  testing::TempDir dir;
  std::ofstream(dir / "in", std::ios::binary)
      .write(reinterpret_cast<const char*>(images.data()),
             static_cast<std::streamsize>(n * kImages));
  std::ofstream(dir / "reference.py") << kGrayscaleReference;
  ASSERT_EQ(std::system((stoker::testing::reference_python() + " " + (dir / "reference.py") + " " +
                         (dir / "in") + " " + (dir / "out") + " " + backend)
                            .c_str()),
            0);
  std::ifstream in(dir / "out", std::ios::binary);
  const std::vector<uint8_t> grey{std::istreambuf_iterator<char>(in), {}};
  ASSERT_EQ(grey.size(), images.size());
  int made_grey = 0;
  for (int i = 0; i < kImages; ++i) {
    std::vector<uint8_t> image(images.begin() + i * n, images.begin() + (i + 1) * n);
    ASSERT_TRUE(grayscale(0.5, shape, backend)->apply(grayscale_sample(i), image.data()).is_ok());
    const bool drawn = grayscale_sample(i).rng().next_double() < 0.5;
    made_grey += drawn;
    const auto expected = (drawn ? grey : images).begin() + i * n;
    EXPECT_TRUE(std::equal(image.begin(), image.end(), expected)) << "image " << i;
  }
  EXPECT_GT(made_grey, 5);
  EXPECT_LT(made_grey, kImages - 5);
}

TEST(RandomGrayscaleTest, GreyWhereDrawnIsTorchvisionsTensorGreyPixelForPixel) {
  expect_torchvisions_grey("tensor");
}

TEST(RandomGrayscaleTest, WithBackendPilGreyIsTorchvisionsPilGreyPixelForPixel) {
  expect_torchvisions_grey("pil");
}

TEST(RandomGrayscaleTest, OneChannelStaysAndOtherShapesAreRefused) {
  std::vector<uint8_t> image = noise(20, 1);
  const std::vector<uint8_t> before = image;
  ASSERT_TRUE(grayscale(1.0, {1, 4, 5})->apply(grayscale_sample(0), image.data()).is_ok());
  EXPECT_EQ(image, before);
  const OpCall call = make_op_call("random_grayscale", {}).value();
  EXPECT_EQ(call.params.real("p"), 0.1);  // torchvision's default
  EXPECT_EQ(call.op->make_pixel(call.params, {"image", {4, 4, 4}}).status().message(),
            "field 'image': random_grayscale needs images [1 or 3, H, W], not [4, 4, 4]");
  EXPECT_EQ(make_op_call("random_grayscale", {{"p", 1.5}}).status().message(),
            "random_grayscale: p must be a number in [0, 1], not 1.5");
}

}  // namespace
}  // namespace stoker
