#include "stoker/image/crop_sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "stoker/testing/temp_dir.h"
#include "stoker/testing/torchvision_reference.h"

namespace stoker::image {
namespace {

TEST(CropSamplerTest, RoundHalfEvenIsPythonsRound) {
  // Python: [round(x) for x in (0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, 2.5001, 7.0, -2.6)]
  EXPECT_EQ(round_half_even(0.5), 0.0);
  EXPECT_EQ(round_half_even(1.5), 2.0);
  EXPECT_EQ(round_half_even(2.5), 2.0);
  EXPECT_EQ(round_half_even(-0.5), 0.0);
  EXPECT_EQ(round_half_even(-1.5), -2.0);
  EXPECT_EQ(round_half_even(2.4999), 2.0);
  EXPECT_EQ(round_half_even(2.5001), 3.0);
  EXPECT_EQ(round_half_even(7.0), 7.0);
  EXPECT_EQ(round_half_even(-2.6), -3.0);
  EXPECT_EQ(round_half_even(0.49999999999999994), 0.0);  // the largest double below 0.5
}

TEST(CropSamplerTest, CropsLieInsideTheImage) {
  const RandomResizedCropParams params;
  for (auto [w, h] : {std::pair{1, 1},
                      {1, 7},
                      {9, 1},
                      {2, 3},
                      {500, 375},
                      {375, 500},
                      {64, 64},
                      {2000, 100},
                      {100, 2000},
                      {1199, 881}}) {
    for (int index = 0; index < 300; ++index) {
      CounterRng rng(17, sample_stream(0, index));
      auto crop = random_resized_crop(w, h, params, rng);
      ASSERT_TRUE(crop.is_ok()) << crop.status().message();
      const CropRect& c = crop.value();
      ASSERT_GE(c.x, 0);
      ASSERT_GE(c.y, 0);
      ASSERT_GE(c.width, 1);
      ASSERT_GE(c.height, 1);
      ASSERT_LE(c.x + c.width, w) << w << "x" << h;
      ASSERT_LE(c.y + c.height, h) << w << "x" << h;
    }
  }
}

TEST(CropSamplerTest, DeterministicPerSeedEpochAndIndex) {
  const RandomResizedCropParams params;
  const auto draw = [&](uint64_t seed, int64_t epoch, int64_t index) {
    CounterRng rng(seed, sample_stream(epoch, index));
    const CropRect c = random_resized_crop(640, 480, params, rng).value();
    return std::tuple{c.x, c.y, c.width, c.height};
  };
  std::set<std::tuple<int, int, int, int>> distinct;
  for (int64_t index = 0; index < 200; ++index) {
    EXPECT_EQ(draw(5, 2, index), draw(5, 2, index));
    distinct.insert(draw(5, 2, index));
  }
  EXPECT_GT(distinct.size(), 190u);  // crops of other samples differ
  EXPECT_NE(draw(5, 2, 0), draw(5, 3, 0));
  EXPECT_NE(draw(5, 2, 0), draw(6, 2, 0));
}

TEST(CropSamplerTest, FallbackIsTheCentralCropClampedToTheRatioRange) {
  // No attempt fits a 2000x100 image (h >= sqrt(0.08 * 200000 * 3/4) > 100): h = 100 and
  // w = round(100 * 4/3) = 133, centred: x = (2000 - 133) // 2 = 933.
  const RandomResizedCropParams params;
  CounterRng rng(1, 2);
  bool fell_back = false;
  CropRect c = random_resized_crop(2000, 100, params, rng, &fell_back).value();
  EXPECT_TRUE(fell_back);
  EXPECT_EQ(std::tuple(c.x, c.y, c.width, c.height), std::tuple(933, 0, 133, 100));
  EXPECT_EQ(rng.counter(), 20u);  // 10 attempts of 2 draws, no position drawn
  // Tall: w = 100, h = round(100 / (3/4)) = 133, y = (2000 - 133) // 2.
  c = random_resized_crop(100, 2000, params, rng, &fell_back).value();
  EXPECT_TRUE(fell_back);
  EXPECT_EQ(std::tuple(c.x, c.y, c.width, c.height), std::tuple(0, 933, 100, 133));
  // Within the ratio range the fallback is the whole image: scale (2, 3) never fits.
  RandomResizedCropParams too_big;
  too_big.scale_min = 2;
  too_big.scale_max = 3;
  c = random_resized_crop(300, 250, too_big, rng, &fell_back).value();
  EXPECT_TRUE(fell_back);
  EXPECT_EQ(std::tuple(c.x, c.y, c.width, c.height), std::tuple(0, 0, 300, 250));
  // An accepted attempt: the whole range of scale 1 and ratio 1 is the whole square image.
  RandomResizedCropParams whole{1.0, 1.0, 1.0, 1.0};
  c = random_resized_crop(77, 77, whole, rng, &fell_back).value();
  EXPECT_FALSE(fell_back);
  EXPECT_EQ(std::tuple(c.x, c.y, c.width, c.height), std::tuple(0, 0, 77, 77));
}

TEST(CropSamplerTest, BadInputIsAnInvalidArgument) {
  CounterRng rng(1, 1);
  const RandomResizedCropParams params;
  EXPECT_EQ(random_resized_crop(0, 10, params, rng).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(random_resized_crop(10, -1, params, rng).status().code(), StatusCode::kInvalidArgument);
  for (RandomResizedCropParams bad :
       {RandomResizedCropParams{0.5, 0.4, 0.75, 1.3}, RandomResizedCropParams{0, 1, 0.75, 1.3},
        RandomResizedCropParams{0.1, NAN, 0.75, 1.3}, RandomResizedCropParams{0.1, 1, 1.5, 1.3},
        RandomResizedCropParams{0.1, 1, -1, 1.3}, RandomResizedCropParams{0.1, 1, 1, INFINITY}}) {
    EXPECT_EQ(check_random_resized_crop_params(bad).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(random_resized_crop(10, 10, bad, rng).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(check_random_resized_crop_params(params).is_ok());
}

// 10,000 crops of each shape from stoker and from torchvision: the same distribution of area
// fraction and log aspect ratio (two-sample Kolmogorov-Smirnov, not rejected at p = 0.01), and
// the fallback taken about as often.
TEST(CropSamplerTest, SameDistributionAsTorchvision) {
  constexpr int kDraws = 10000;
  const RandomResizedCropParams params;
  const std::pair<int, int> shapes[] = {{500, 375}, {375, 500}, {64, 64}, {500, 100}, {2000, 100}};
  testing::TempDir dir;
  std::string args = "crops 1";
  for (auto [w, h] : shapes) {
    const std::string path = dir / (std::to_string(w) + "x" + std::to_string(h) + ".txt");
    std::ofstream out(path);
    for (int index = 0; index < kDraws; ++index) {
      CounterRng rng(1234, sample_stream(0, index));
      bool fell_back = false;
      const CropRect c = random_resized_crop(w, h, params, rng, &fell_back).value();
      out << c.x << ' ' << c.y << ' ' << c.width << ' ' << c.height << ' ' << fell_back << '\n';
    }
    args += " " + std::to_string(w) + " " + std::to_string(h) + " " + path;
  }
  std::istringstream lines(test::run_torchvision_reference(args));
  for (auto [w, h] : shapes) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    std::string line;
    ASSERT_TRUE(std::getline(lines, line));
    double area_p = -1, ratio_p = -1;
    int stoker_fallbacks = -1, torch_fallbacks = -1;
    ASSERT_EQ(std::sscanf(line.c_str(),
                          "area_p=%lf log_ratio_p=%lf stoker_fallbacks=%d torchvision_fallbacks=%d",
                          &area_p, &ratio_p, &stoker_fallbacks, &torch_fallbacks),
              4)
        << line;
    std::printf("%dx%d: %s\n", w, h, line.c_str());
    EXPECT_GE(area_p, 0.01);
    EXPECT_GE(ratio_p, 0.01);
    // Two binomial counts of the same rate p: their difference has sd sqrt(2 n p (1 - p)).
    const double rate = (stoker_fallbacks + torch_fallbacks) / (2.0 * kDraws);
    EXPECT_LE(std::abs(stoker_fallbacks - torch_fallbacks),
              4 * std::sqrt(2.0 * kDraws * rate * (1 - rate)) + 1);
  }
}

TEST(CropSamplerTest, ResizeCenterCropFollowsTorchvisionsArithmetic) {
  // 500x375, Resize(256): 256 x int(256 * 500 / 375) = 341x256; CenterCrop(224): top
  // round(32 / 2) = 16, left round(117 / 2) = round(58.5) = 58 (half to even).
  ResizedCenterCrop c = resize_center_crop(500, 375, 256, 224, 224).value();
  EXPECT_EQ(c.resized_width, 341);
  EXPECT_EQ(c.resized_height, 256);
  EXPECT_EQ(c.width, 224);
  EXPECT_EQ(c.height, 224);
  EXPECT_DOUBLE_EQ(c.box.x0, 58 * 500.0 / 341);
  EXPECT_DOUBLE_EQ(c.box.x1, (58 + 224) * 500.0 / 341);
  EXPECT_DOUBLE_EQ(c.box.y0, 16 * 375.0 / 256);
  EXPECT_DOUBLE_EQ(c.box.y1, (16 + 224) * 375.0 / 256);
  // Portrait, odd crop: 300x451 -> 100 x int(100 * 451 / 300) = 100x150; crop 99x57:
  // left round(0.5) = 0, top round(46.5) = 46.
  c = resize_center_crop(300, 451, 100, 99, 57).value();
  EXPECT_EQ(c.resized_width, 100);
  EXPECT_EQ(c.resized_height, 150);
  EXPECT_DOUBLE_EQ(c.box.x0, 0);
  EXPECT_DOUBLE_EQ(c.box.y0, 46 * 451.0 / 150);
  // The crop is the whole resized image: the box is the whole source, exactly.
  c = resize_center_crop(333, 222, 64, 96, 64).value();
  EXPECT_EQ(c.resized_width, 96);
  EXPECT_EQ(std::tuple(c.box.x0, c.box.y0, c.box.x1, c.box.y1), std::tuple(0.0, 0.0, 333.0, 222.0));
  EXPECT_EQ(std::tuple(c.pad_left, c.pad_top, c.inner_width, c.inner_height),
            std::tuple(0, 0, 96, 64));
  // A crop larger than the resized image: torchvision pads (c - r) // 2 zeros before, the whole
  // side resampled between. 500x375 -> 266x200; crop 224x231: rows padded 15 before.
  c = resize_center_crop(500, 375, 200, 224, 231).value();
  EXPECT_EQ(std::tuple(c.resized_width, c.resized_height), std::tuple(266, 200));
  EXPECT_EQ(std::tuple(c.pad_left, c.pad_top, c.inner_width, c.inner_height),
            std::tuple(0, 15, 224, 200));
  EXPECT_DOUBLE_EQ(c.box.x0, 21 * 500.0 / 266);
  EXPECT_EQ(std::tuple(c.box.y0, c.box.y1), std::tuple(0.0, 375.0));
  // max_size: 1000x250, Resize(256) would be 1024x256; max_size 600 makes it
  // 600 x int(600 * 256 / 1024) = 600x150; a 224 crop pads rows by 37 before, 37 after.
  c = resize_center_crop(1000, 250, 256, 224, 224, 600).value();
  EXPECT_EQ(std::tuple(c.resized_width, c.resized_height), std::tuple(600, 150));
  EXPECT_EQ(std::tuple(c.pad_left, c.pad_top, c.inner_width, c.inner_height),
            std::tuple(0, 37, 224, 150));
  // Under max_size, as without it.
  c = resize_center_crop(500, 375, 256, 224, 224, 342).value();
  EXPECT_EQ(std::tuple(c.resized_width, c.resized_height), std::tuple(341, 256));
  // max_size not above the size (torchvision's ValueError) and empty sizes are refused.
  EXPECT_EQ(resize_center_crop(500, 375, 256, 224, 224, 256).status().message(),
            "max_size 256 must be above the resize size 256");
  EXPECT_EQ(resize_center_crop(0, 375, 256, 224, 224).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(resize_center_crop(500, 375, 0, 224, 224).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(resize_center_crop(500, 375, 256, 0, 224).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker::image
