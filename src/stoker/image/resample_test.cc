#include "stoker/image/resample.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/image/crop_sampler.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/torchvision_reference.h"
#include "stoker/util/rng.h"

namespace stoker::image {
namespace {

// A test image of 8-bit RGB pixels, rows back to back.
struct TestImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;

  RgbView view() const { return {pixels.data(), width, height, 3 * static_cast<ptrdiff_t>(width)}; }
  // The view of `c` inside this image: the image's stride.
  RgbView crop(const CropRect& c) const {
    return {pixels.data() + (static_cast<size_t>(c.y) * width + c.x) * 3, c.width, c.height,
            3 * static_cast<ptrdiff_t>(width)};
  }
};

enum class Content { kSmooth, kNoisy, kMixed };

// Smooth: a few sinusoids per channel; noisy: uniform random bytes; mixed: smooth with noise and
// hard-edged blocks of black and white.
TestImage make_image(int width, int height, Content content, uint64_t seed) {
  CounterRng rng(seed, 0);
  TestImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  double fx[3], fy[3], phase[3];
  for (int c = 0; c < 3; ++c) {
    fx[c] = 0.3 * rng.next_double();
    fy[c] = 0.3 * rng.next_double();
    phase[c] = 6.3 * rng.next_double();
  }
  const int block = 1 + static_cast<int>(rng.uniform_below(16));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        double v = 127.5 + 127.5 * std::sin(fx[c] * x + fy[c] * y + phase[c]);
        if (content == Content::kNoisy) v = static_cast<double>(rng.uniform_below(256));
        if (content == Content::kMixed) {
          v += static_cast<double>(rng.uniform_below(61)) - 30;
          if (((x / block) + (y / block)) % 5 == 0) v = ((x / block) % 2) ? 255 : 0;
        }
        image.pixels[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  return image;
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The largest difference torchvision's ((v / 255) - mean) / std and stoker's v * scale + bias
// can show, before normalisation (times std), for the same v (resample.h, docs/ARCHITECTURE.md).
double float_bound(float mean) { return (7 + 4 * std::abs(mean)) * 0x1.0p-24 * (1 + 0x1.0p-20); }

// One comparison with torchvision: what stoker is given and what the script is asked.
struct Case {
  nlohmann::json spec;  // for the script
  RgbView src;          // stoker's input
  PixelBox box;
  ResampleOutput out;
};

class ResampleTest : public ::testing::Test {
 protected:
  // Runs the script on every case and compares both kernels' uint8 and float32 outputs with its
  // answers.
  void compare_with_torchvision(const std::vector<Case>& cases) {
    nlohmann::json specs = nlohmann::json::array();
    for (const Case& c : cases) specs.push_back(c.spec);
    const std::string cases_path = dir_ / "cases.json";
    std::ofstream(cases_path) << specs.dump();
    test::run_torchvision_reference("resample " + cases_path);
    for (ResampleKernel kernel : {ResampleKernel::kSimd, ResampleKernel::kScalar}) {
      Resampler resampler(kernel);
      SCOPED_TRACE(resampler.kernel_name());
      for (const Case& c : cases) compare_case(resampler, c);
    }
  }

  // uint8 identical, float within float_bound and on average within one grey level.
  void compare_case(Resampler& resampler, const Case& c) {
    SCOPED_TRACE(c.spec.dump());
    const size_t n = static_cast<size_t>(c.out.width) * c.out.height * 3;
    const std::vector<char> want_u8 = read_bytes(c.spec["out"].get<std::string>() + ".u8");
    ASSERT_EQ(want_u8.size(), n);
    ResampleOutput out = c.out;
    out.type = ResampleOutput::Type::kUint8;
    std::vector<uint8_t> got_u8(n);
    ASSERT_TRUE(resampler.resample(c.src, c.box, out, got_u8.data()).is_ok());
    size_t mismatches = 0;
    for (size_t i = 0; i < n; ++i) mismatches += got_u8[i] != static_cast<uint8_t>(want_u8[i]);
    EXPECT_EQ(mismatches, 0u) << "of " << n;
    if (c.spec["kind"] == "box") return;

    const std::vector<char> want_bytes = read_bytes(c.spec["out"].get<std::string>() + ".f32");
    ASSERT_EQ(want_bytes.size(), n * sizeof(float));
    std::vector<float> want(n), got(n);
    std::memcpy(want.data(), want_bytes.data(), want_bytes.size());
    out.type = ResampleOutput::Type::kFloat32;
    ASSERT_TRUE(
        resampler.resample(c.src, c.box, out, reinterpret_cast<uint8_t*>(got.data())).is_ok());
    const size_t plane = n / 3;
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      const int ch = static_cast<int>(i / plane);
      const double diff = std::abs(static_cast<double>(got[i]) - want[i]) * std::abs(out.std[ch]);
      sum += diff;
      max_diff_ = std::max(max_diff_, diff);
      ASSERT_LE(diff, float_bound(out.mean[ch])) << "element " << i;
    }
    EXPECT_LE(sum / n, 1.0 / 255);
  }

  // A case for the script: the image written to a file, the answer's file name.
  nlohmann::json spec(const TestImage& image, const std::string& kind, const ResampleOutput& out) {
    const std::string name = dir_ / ("case" + std::to_string(next_++));
    const bool bicubic = out.filter == ResampleFilter::kBicubic;
    std::ofstream(name + ".rgb", std::ios::binary)
        .write(reinterpret_cast<const char*>(image.pixels.data()),
               static_cast<std::streamsize>(image.pixels.size()));
    return {{"kind", kind},
            {"image", name + ".rgb"},
            {"width", image.width},
            {"height", image.height},
            {"out", name},
            {"out_width", out.width},
            {"out_height", out.height},
            {"mean", out.mean},
            {"std", out.std},
            {"interpolation", bicubic ? "bicubic" : "bilinear"}};
  }

  testing::TempDir dir_;
  int next_ = 0;
  double max_diff_ = 0;
};

// torchvision's training path (RandomResizedCrop's crop, resize, flip, ToTensor, Normalize) on
// images from 1x1 to 1200 px, crops from the sampler and arbitrary ones (upscales too); every
// third case bicubic.
TEST_F(ResampleTest, TrainingCropsMatchTorchvision) {
  const std::pair<int, int> sizes[] = {{1, 1},     {1, 7},     {7, 1},      {2, 3},
                                       {13, 17},   {64, 48},   {223, 225},  {375, 500},
                                       {500, 375}, {640, 427}, {1200, 900}, {1199, 801}};
  const std::pair<int, int> outputs[] = {{224, 224}, {64, 64}, {37, 53}, {97, 31}, {1, 1}};
  std::vector<TestImage> images;
  images.reserve(std::size(sizes) * 3);
  std::vector<Case> cases;
  CounterRng rng(99, 1);
  int k = 0;
  for (auto [w, h] : sizes) {
    for (Content content : {Content::kSmooth, Content::kNoisy, Content::kMixed}) {
      images.push_back(make_image(w, h, content, images.size()));
      const TestImage& image = images.back();
      for (int draw = 0; draw < 2; ++draw) {
        CropRect crop;
        if (draw == 0) {
          crop = random_resized_crop(w, h, {}, rng).value();
        } else {  // any rectangle, small ones (upscales) included
          crop.width = 1 + static_cast<int>(rng.uniform_below(w));
          crop.height = 1 + static_cast<int>(rng.uniform_below(h));
          crop.x = static_cast<int>(rng.uniform_below(w - crop.width + 1));
          crop.y = static_cast<int>(rng.uniform_below(h - crop.height + 1));
        }
        Case c;
        c.out.width = outputs[k % std::size(outputs)].first;
        c.out.height = outputs[k % std::size(outputs)].second;
        c.out.flip_horizontal = (k / 2) % 2 == 1;
        c.out.filter = k++ % 3 == 0 ? ResampleFilter::kBicubic : ResampleFilter::kBilinear;
        c.out.mean = {0.485f, 0.456f, 0.406f};
        c.out.std = {0.229f, 0.224f, 0.225f};
        c.src = image.crop(crop);
        c.box = PixelBox{0, 0, static_cast<double>(crop.width), static_cast<double>(crop.height)};
        c.spec = spec(image, "train", c.out);
        c.spec["crop"] = {crop.x, crop.y, crop.width, crop.height};
        c.spec["flip"] = c.out.flip_horizontal;
        cases.push_back(c);
      }
    }
  }
  compare_with_torchvision(cases);
  std::printf("largest float difference from torchvision (times std): %.3g\n", max_diff_);
}

// Evaluation: Resize(S) + CenterCrop as one resample of the crop's pre-image in the source,
// bilinear and bicubic.
TEST_F(ResampleTest, ResizeCenterCropMatchesTorchvision) {
  struct Eval {
    int width, height, resize, crop_width, crop_height;
  };
  const Eval evals[] = {{500, 375, 256, 224, 224},  {375, 500, 256, 224, 224},
                        {1200, 900, 256, 224, 224}, {256, 256, 256, 224, 224},
                        {300, 451, 256, 224, 224},  {1199, 801, 256, 224, 224},
                        {257, 1000, 256, 224, 224}, {640, 427, 73, 61, 50},
                        {100, 80, 256, 224, 224},   {333, 222, 64, 96, 64}};
  std::vector<TestImage> images;
  images.reserve(std::size(evals));
  std::vector<Case> cases;
  for (const Eval& e : evals) {
    images.push_back(make_image(e.width, e.height, Content::kMixed, 1000 + images.size()));
    const ResizedCenterCrop crop =
        resize_center_crop(e.width, e.height, e.resize, e.crop_width, e.crop_height).value();
    for (ResampleFilter filter : {ResampleFilter::kBilinear, ResampleFilter::kBicubic}) {
      Case c;
      c.out.width = crop.width;
      c.out.height = crop.height;
      c.out.mean = {0.5f, 0.25f, 0.0f};
      c.out.std = {0.5f, 0.125f, 1.0f};
      c.out.filter = filter;
      c.src = images.back().view();
      c.box = crop.box;
      c.spec = spec(images.back(), "eval", c.out);
      c.spec["resize"] = e.resize;
      cases.push_back(c);
    }
  }
  compare_with_torchvision(cases);
}

// A fractional box, as a DCT-scaled decode gives: PIL's Image.resize with that box, bilinear and
// bicubic.
TEST_F(ResampleTest, FractionalBoxesMatchPil) {
  struct BoxCase {
    int width, height;
    PixelBox box;
    int out_width, out_height;
  };
  const BoxCase boxes[] = {{320, 240, {10.5, 3.25, 200.75, 150.125}, 224, 224},
                           {320, 240, {0.125, 0.5, 319.875, 239.5}, 64, 48},
                           {57, 91, {3.5, 7.25, 40.0, 90.5}, 113, 150},
                           {800, 600, {100.25, 50.75, 700.5, 599.0}, 224, 224}};
  std::vector<TestImage> images;
  images.reserve(std::size(boxes));
  std::vector<Case> cases;
  for (const BoxCase& b : boxes) {
    images.push_back(make_image(b.width, b.height, Content::kMixed, 2000 + images.size()));
    for (ResampleFilter filter : {ResampleFilter::kBilinear, ResampleFilter::kBicubic}) {
      Case c;
      c.out.width = b.out_width;
      c.out.height = b.out_height;
      c.out.filter = filter;
      c.src = images.back().view();
      c.box = b.box;
      c.spec = spec(images.back(), "box", c.out);
      c.spec["box"] = {b.box.x0, b.box.y0, b.box.x1, b.box.y1};
      cases.push_back(c);
    }
  }
  compare_with_torchvision(cases);
}

// Resamples `box` of `src` to `out` (its type decides the element size), written at an odd
// address (the destination needs no alignment), with a guard byte after it.
// The sample written at an odd address, or with `aligned` at a 64-byte boundary (where the SIMD
// kernel writes whole float vectors with non-temporal stores), between two guard bytes.
std::vector<uint8_t> resample_bytes(Resampler& resampler, const RgbView& src, const PixelBox& box,
                                    const ResampleOutput& out, bool aligned = false) {
  const size_t element = out.type == ResampleOutput::Type::kFloat32 ? sizeof(float) : 1;
  const bool window = out.window.width != 0;
  const size_t n = static_cast<size_t>(window ? out.window.width : out.width) *
                   (window ? out.window.height : out.height) * 3 * element;
  std::vector<uint8_t> buffer(n + 128, 0x5a);
  size_t at = 1;
  if (aligned) at = 64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64;
  const Status status = resampler.resample(src, box, out, buffer.data() + at);
  EXPECT_TRUE(status.is_ok()) << status.message();
  EXPECT_EQ(buffer[at - 1], 0x5a);
  EXPECT_EQ(buffer[at + n], 0x5a);
  return std::vector<uint8_t>(buffer.begin() + at, buffer.begin() + at + n);
}

ResampleOutput uint8_output(int width, int height, bool flip = false) {
  ResampleOutput out;
  out.width = width;
  out.height = height;
  out.flip_horizontal = flip;
  out.type = ResampleOutput::Type::kUint8;
  return out;
}

TEST(ResamplerTest, FlipMirrorsTheColumns) {
  const TestImage image = make_image(301, 203, Content::kMixed, 7);
  const PixelBox box{0, 0, 301, 203};
  Resampler resampler;
  const std::vector<uint8_t> plain =
      resample_bytes(resampler, image.view(), box, uint8_output(97, 64));
  const std::vector<uint8_t> flipped =
      resample_bytes(resampler, image.view(), box, uint8_output(97, 64, true));
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 64; ++y)
      for (int x = 0; x < 97; ++x)
        ASSERT_EQ(flipped[(c * 64 + y) * 97 + x], plain[(c * 64 + y) * 97 + 96 - x]);
  EXPECT_NE(plain, flipped);
}

// A window of the output is those pixels of the whole output (flipped: the window's columns
// mirrored), for both kernels, both filters, down- and upscaling, windows at every edge.
TEST(ResamplerTest, AWindowIsThosepixelsOfTheWholeOutput) {
  const TestImage image = make_image(157, 93, Content::kMixed, 11);
  const PixelBox box{0, 0, 157, 93};
  CounterRng rng(12, 0);
  for (auto kernel : {ResampleKernel::kSimd, ResampleKernel::kScalar}) {
    Resampler resampler(kernel);
    for (int k = 0; k < 60; ++k) {
      ResampleOutput out = uint8_output(1 + static_cast<int>(rng.uniform_below(400)),
                                        1 + static_cast<int>(rng.uniform_below(300)));
      if (k % 3 == 0) out.filter = ResampleFilter::kBicubic;
      const std::vector<uint8_t> whole = resample_bytes(resampler, image.view(), box, out);
      ResampleWindow& w = out.window;
      w.x = static_cast<int>(rng.uniform_below(out.width));
      w.y = static_cast<int>(rng.uniform_below(out.height));
      w.width = 1 + static_cast<int>(rng.uniform_below(out.width - w.x));
      w.height = 1 + static_cast<int>(rng.uniform_below(out.height - w.y));
      if (k % 4 == 1) w = {out.width - w.width, out.height - w.height, w.width, w.height};
      out.flip_horizontal = k % 2 == 1;
      const std::vector<uint8_t> part = resample_bytes(resampler, image.view(), box, out);
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < w.height; ++y)
          for (int x = 0; x < w.width; ++x) {
            const int from = out.flip_horizontal ? w.width - 1 - x : x;
            ASSERT_EQ(
                part[(static_cast<size_t>(c) * w.height + y) * w.width + x],
                whole[(static_cast<size_t>(c) * out.height + w.y + y) * out.width + w.x + from])
                << out.width << "x" << out.height << " window " << w.width << "x" << w.height
                << " at " << w.x << "," << w.y << " pixel " << x << "," << y;
          }
    }
  }
}

TEST(ResamplerTest, OnePixelSourceFillsTheOutput) {
  const uint8_t pixel[3] = {7, 130, 255};
  Resampler resampler;
  const std::vector<uint8_t> out =
      resample_bytes(resampler, RgbView{pixel, 1, 1, 3}, PixelBox{0, 0, 1, 1}, uint8_output(5, 3));
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 15; ++i) ASSERT_EQ(out[c * 15 + i], pixel[c]);
}

TEST(ResamplerTest, FloatIsTheUint8ValueAsTorchvisionMakesIt) {
  // float_pixel(v, unit, mean, std): torchvision's float32 operations, each rounded; by both
  // kernels, for both unit scales (v1's v / 255, v2's v * (1 / 255)).
  const TestImage image = make_image(400, 300, Content::kNoisy, 8);
  const PixelBox box{13, 7, 390, 290};
  for (const ResampleKernel kernel : {ResampleKernel::kSimd, ResampleKernel::kScalar}) {
    for (const UnitScale unit : {UnitScale::kDivide, UnitScale::kMultiply}) {
      ResampleOutput out = uint8_output(224, 224, true);
      Resampler resampler(kernel);
      const std::vector<uint8_t> values = resample_bytes(resampler, image.view(), box, out);
      out.type = ResampleOutput::Type::kFloat32;
      out.unit = unit;
      out.mean = {0.485f, -0.5f, 3.0f};
      out.std = {0.229f, 2.0f, -0.5f};
      const std::vector<uint8_t> bytes = resample_bytes(resampler, image.view(), box, out);
      const size_t plane = 224 * 224;
      for (size_t i = 0; i < values.size(); ++i) {
        const int c = static_cast<int>(i / plane);
        float got;
        std::memcpy(&got, &bytes[i * sizeof(float)], sizeof(float));
        const float x = unit == UnitScale::kDivide ? values[i] / 255.0f : values[i] * kInverse255;
        ASSERT_EQ(got, (x - out.mean[c]) / out.std[c]) << i;
      }
    }
  }
}

TEST(ResamplerTest, BadArgumentsAreRefusedWithoutWriting) {
  const TestImage image = make_image(20, 10, Content::kSmooth, 9);
  const RgbView src = image.view();
  const PixelBox whole{0, 0, 20, 10};
  const ResampleOutput out = uint8_output(8, 8);
  Resampler resampler;
  std::vector<uint8_t> dst(8 * 8 * 3, 0xab);
  const auto refused = [&](const RgbView& s, const PixelBox& b, const ResampleOutput& o,
                           uint8_t* d) {
    const Status status = resampler.resample(s, b, o, d);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(std::count(status.message().begin(), status.message().end(), '\n'), 0);
    return !status.is_ok();
  };
  for (const PixelBox& box :
       {PixelBox{5, 5, 5, 8}, PixelBox{6, 2, 4, 8}, PixelBox{-1, 0, 10, 10},
        PixelBox{0, 0, 20.5, 10}, PixelBox{0, 0, 20, 11}, PixelBox{30, 0, 40, 5},
        PixelBox{NAN, 0, 10, 10}, PixelBox{0, 0, INFINITY, 10}, PixelBox{0, -INFINITY, 10, 10}})
    EXPECT_TRUE(refused(src, box, out, dst.data())) << box.x0 << " " << box.y0 << " " << box.x1;
  EXPECT_TRUE(refused(RgbView{nullptr, 20, 10, 60}, whole, out, dst.data()));
  EXPECT_TRUE(refused(RgbView{src.data, 0, 10, 60}, whole, out, dst.data()));
  EXPECT_TRUE(refused(RgbView{src.data, 20, 10, 59}, whole, out, dst.data()));
  EXPECT_TRUE(refused(src, whole, out, nullptr));
  for (auto [w, h] : {std::pair{0, 8}, {8, -1}, {kMaxResampleOutputSide + 1, 8}}) {
    ResampleOutput bad = out;
    bad.width = w;
    bad.height = h;
    EXPECT_TRUE(refused(src, whole, bad, dst.data()));
  }
  // 100,000 source rows to a 32768-wide output: an intermediate image of 3.3 G pixels.
  const std::vector<uint8_t> tall(100000 * 3, 7);
  ResampleOutput wide = out;
  wide.width = kMaxResampleOutputSide;
  wide.height = 1;
  EXPECT_TRUE(
      refused(RgbView{tall.data(), 1, 100000, 3}, PixelBox{0, 0, 1, 100000}, wide, dst.data()));
  ResampleOutput bad_norm = out;
  bad_norm.type = ResampleOutput::Type::kFloat32;
  for (auto [m, sd] : {std::pair{0.0f, 0.0f}, {NAN, 1.0f}, {0.0f, INFINITY}}) {
    bad_norm.mean[1] = m;
    bad_norm.std[1] = sd;
    EXPECT_TRUE(refused(src, whole, bad_norm, dst.data()));
  }
  for (const ResampleWindow& w : {ResampleWindow{-1, 0, 2, 2}, ResampleWindow{0, 0, 9, 8},
                                  ResampleWindow{7, 7, 2, 1}, ResampleWindow{0, 0, 1, 0}}) {
    ResampleOutput bad = out;
    bad.window = w;
    EXPECT_TRUE(refused(src, whole, bad, dst.data())) << w.x << " " << w.y << " " << w.width;
  }
  EXPECT_EQ(std::count(dst.begin(), dst.end(), 0xab), static_cast<ptrdiff_t>(dst.size()));
}

// Every SIMD build this CPU runs (SSSE3 .. AVX-512) against the scalar reference: the same
// bytes, on sizes around the vector widths (narrower than a vector, tails, partial row groups),
// fractional boxes, flips and both output types.
TEST(ResamplerTest, SimdKernelsWriteTheScalarBytes) {
  std::vector<TestImage> images;
  for (auto [w, h] : {std::pair{1, 1}, {2, 2}, {3, 5}, {17, 9}, {33, 31}, {67, 70}, {250, 190}})
    images.push_back(make_image(w, h, Content::kNoisy, w * 1000 + h));
  Resampler scalar(ResampleKernel::kScalar);
  int targets = 0;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    Resampler simd(ResampleKernel::kSimd);
    EXPECT_STREQ(simd.kernel_name(), hwy::TargetName(target));
    std::printf("checked %s\n", simd.kernel_name());
    ++targets;
    CounterRng rng(5, static_cast<uint64_t>(target));
    for (int k = 0; k < 300; ++k) {
      const TestImage& image = images[k % images.size()];
      // Boxes on a grid of eighths, sometimes the whole image.
      const auto coordinate = [&](int size) { return rng.uniform_below(8 * size + 1) / 8.0; };
      PixelBox box{0, 0, static_cast<double>(image.width), static_cast<double>(image.height)};
      if (k % 3 != 0) {
        double a = coordinate(image.width), b = coordinate(image.width);
        double c = coordinate(image.height), d = coordinate(image.height);
        if (a == b || c == d) continue;
        box = PixelBox{std::min(a, b), std::min(c, d), std::max(a, b), std::max(c, d)};
      }
      // Every fifth a width of whole vectors at an aligned address (non-temporal stores).
      const bool aligned = k % 5 == 0;
      const int width = aligned ? 16 * (1 + static_cast<int>(rng.uniform_below(5)))
                                : 1 + static_cast<int>(rng.uniform_below(80));
      ResampleOutput out =
          uint8_output(width, 1 + static_cast<int>(rng.uniform_below(80)), k % 2 == 1);
      if (k % 7 < 3) out.filter = ResampleFilter::kBicubic;  // negative sums clipped too
      if (k % 4 >= 2) {
        out.type = ResampleOutput::Type::kFloat32;
        out.mean = {0.485f, 0.456f, 0.406f};
        out.std = {0.229f, 0.224f, 0.225f};
      }
      ASSERT_EQ(resample_bytes(simd, image.view(), box, out, aligned),
                resample_bytes(scalar, image.view(), box, out))
          << hwy::TargetName(target) << " " << image.width << "x" << image.height << " box "
          << box.x0 << "," << box.y0 << "," << box.x1 << "," << box.y1 << " to " << out.width << "x"
          << out.height;
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GE(targets, 2);  // at least one SIMD build besides the baseline
}

}  // namespace
}  // namespace stoker::image
