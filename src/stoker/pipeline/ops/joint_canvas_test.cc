// joint_canvas.h: a sample placed on a canvas pads where the offset is negative and cuts where it
// is positive, every plane with its own fill, boxes moved, and refuses a canvas of no pixels; a
// waiting resize and mirror are applied to the part kept, the same pixels as applied whole.
#include "stoker/pipeline/ops/joint_canvas.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "stoker/pipeline/ops/joint_resize.h"
#include "stoker/util/rng.h"

namespace stoker::ops {
namespace {

// A 3 x 2 sample: image plane c holds 10 c + x + 3 y, one mask of ones, a box, a class map.
JointSample sample() {
  JointSample s;
  s.width = 3;
  s.height = 2;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 6; ++i) s.image.push_back(static_cast<uint8_t>(10 * c + i));
  s.boxes = {0, 0, 2, 1};
  s.labels = {7};
  s.has_masks = true;
  s.masks.assign(6, 1);
  s.has_class_map = true;
  s.class_map = {1, 2, 3, 4, 5, 6};
  return s;
}

const CanvasFill kFill = {{100, 101, 102}, 9, 255};

TEST(JointCanvasTest, ANegativeOffsetPadsWithEachPlanesFill) {
  JointSample s = sample();
  ASSERT_TRUE(place_joint_sample("op", s, -1, -1, 5, 3, kFill).is_ok());
  EXPECT_EQ(s.width, 5);
  EXPECT_EQ(s.height, 3);
  const std::vector<uint8_t> green = {101, 101, 101, 101, 101, 101, 10, 11,
                                      12,  101, 101, 13,  14,  15,  101};
  EXPECT_EQ(std::vector<uint8_t>(s.image.begin() + 15, s.image.begin() + 30), green);
  EXPECT_EQ(s.masks, (std::vector<uint8_t>{9, 9, 9, 9, 9, 9, 1, 1, 1, 9, 9, 1, 1, 1, 9}));
  EXPECT_EQ(s.class_map[6], 1);
  EXPECT_EQ(s.class_map[0], 255);
  EXPECT_EQ(s.boxes, (std::vector<float>{1, 1, 3, 2}));
}

TEST(JointCanvasTest, APositiveOffsetCutsAndPadsPastTheEdge) {
  JointSample s = sample();
  ASSERT_TRUE(place_joint_sample("op", s, 2, 1, 2, 2, kFill).is_ok());
  EXPECT_EQ(std::vector<uint8_t>(s.image.begin(), s.image.begin() + 4),
            (std::vector<uint8_t>{5, 100, 100, 100}));
  EXPECT_EQ(s.boxes, (std::vector<float>{-2, -1, 0, 0}));  // clamping is the caller's
  JointSample far = sample();
  ASSERT_TRUE(place_joint_sample("op", far, 7, 0, 2, 1, kFill).is_ok());
  EXPECT_EQ(std::vector<uint8_t>(far.image.begin(), far.image.begin() + 2),
            (std::vector<uint8_t>{100, 100}));
}

TEST(JointCanvasTest, ACanvasWithoutPixelsIsOneLineNamingTheOperation) {
  JointSample s = sample();
  EXPECT_EQ(place_joint_sample("random_zoom_out", s, 0, 0, 0, 4, kFill).message(),
            "random_zoom_out: the 3x2 image would be 0x4");
  EXPECT_EQ(image_fill("fixed_size_crop", {1, 2}).status().message(),
            "fixed_size_crop: fill takes one value or 3 (one per channel), not 2");
  EXPECT_EQ(image_fill("fixed_size_crop", {7.9}).value(), (std::array<uint8_t, 3>{7, 7, 7}));
}

// A width x height sample of random pixels, two random masks and a random class map.
JointSample random_sample(int64_t width, int64_t height, CounterRng& rng) {
  JointSample s;
  s.width = width;
  s.height = height;
  const auto random_bytes = [&](int64_t n) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng.uniform_below(256));
    return bytes;
  };
  s.image = random_bytes(3 * width * height);
  s.boxes = {0, 0, 1, 1, 0.5f, 0, 1, 1};
  s.labels = {1, 2};
  s.has_masks = true;
  s.masks = random_bytes(2 * width * height);
  s.has_class_map = true;
  s.class_map = random_bytes(width * height);
  return s;
}

// `planes` planes resized by torch's nearest (or PIL's), written pixel by pixel.
std::vector<uint8_t> nearest(const std::vector<uint8_t>& in, int64_t planes, int64_t width,
                             int64_t height, int64_t new_width, int64_t new_height, bool pil) {
  std::vector<int64_t> rows, columns;
  pil_nearest_indices(height, new_height, rows);
  pil_nearest_indices(width, new_width, columns);
  std::vector<uint8_t> out;
  for (int64_t c = 0; c < planes; ++c)
    for (int64_t y = 0; y < new_height; ++y)
      for (int64_t x = 0; x < new_width; ++x) {
        const int64_t sy = pil ? rows[y] : torch_nearest_index(y, height, new_height);
        const int64_t sx = pil ? columns[x] : torch_nearest_index(x, width, new_width);
        out.push_back(in[(c * height + sy) * width + sx]);
      }
  return out;
}

// An unsettled sample's waiting resize and mirror applied whole, as the joint operations did
// before they waited: the image resized whole by the resampler, masks and class map by
// nearest, then every plane's rows reversed.
JointSample settled_whole(JointSample s) {
  const int64_t width = s.pixels_width(), height = s.pixels_height();
  if (s.interleaved) {
    std::vector<uint8_t> planes;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < width * height; ++i) planes.push_back(s.image[3 * i + c]);
    s.image = planes;
  }
  if (s.resized_from_width > 0) {
    std::vector<uint8_t> interleaved;
    for (int64_t i = 0; i < width * height; ++i)
      for (int64_t c = 0; c < 3; ++c) interleaved.push_back(s.image[c * width * height + i]);
    image::ResampleOutput out;
    out.width = static_cast<int>(s.width);
    out.height = static_cast<int>(s.height);
    out.type = image::ResampleOutput::Type::kUint8;
    std::vector<uint8_t> resized(static_cast<size_t>(3 * s.width * s.height));
    image::Resampler resampler;
    EXPECT_TRUE(resampler
                    .resample({interleaved.data(), static_cast<int>(width),
                               static_cast<int>(height), static_cast<ptrdiff_t>(3 * width)},
                              {0, 0, static_cast<double>(width), static_cast<double>(height)}, out,
                              resized.data())
                    .is_ok());
    s.image = resized;
    s.masks = nearest(s.masks, 2, width, height, s.width, s.height, s.pil_nearest);
    s.class_map = nearest(s.class_map, 1, width, height, s.width, s.height, s.pil_nearest);
  }
  if (s.mirrored) {
    for (auto* planes : {&s.image, &s.masks, &s.class_map})
      for (auto row = planes->begin(); row != planes->end(); row += s.width)
        std::reverse(row, row + s.width);
  }
  s.resized_from_width = s.resized_from_height = 0;
  s.pil_nearest = false;
  s.mirrored = false;
  s.interleaved = false;
  return s;
}

// `s`'s planar image as the decoded RGB rows a sample starts with.
void interleave(JointSample& s) {
  const int64_t plane = s.pixels_width() * s.pixels_height();
  std::vector<uint8_t> rgb;
  for (int64_t i = 0; i < plane; ++i)
    for (int64_t c = 0; c < 3; ++c) rgb.push_back(s.image[c * plane + i]);
  s.image = rgb;
  s.interleaved = true;
}

// PIL's NEAREST picks the source pixel under each output pixel's centre, (i + 0.5) * in / out
// stepped in doubles; torch's floors i * in / out.
TEST(JointCanvasTest, PilsNearestIndicesAreTheCentresStepped) {
  const auto indices = [](int64_t in, int64_t out) {
    std::vector<int64_t> made = {7};  // replaced whole
    pil_nearest_indices(in, out, made);
    return made;
  };
  EXPECT_EQ(indices(5, 3), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(torch_nearest_index(1, 5, 3), 1);
  EXPECT_EQ(indices(3, 7), (std::vector<int64_t>{0, 0, 1, 1, 1, 2, 2}));
  EXPECT_EQ(indices(4, 4), (std::vector<int64_t>{0, 1, 2, 3}));
  // 10 / 3 stepped: 1.666..., 5.0 (not 4.999...), 8.333...
  EXPECT_EQ(indices(10, 3), (std::vector<int64_t>{1, 5, 8}));
}

// A sample whose resize, mirror or decoded layout wait, placed on a canvas (a crop, a pad, both,
// or nothing of it shown), is the sample resized and mirrored whole then placed: random sizes
// down and up, offsets past every edge.
TEST(JointCanvasTest, AWaitingResizeAndMirrorPlacedAreTheWholeSampleResizedThenPlaced) {
  CounterRng rng(21, 0);
  int windows = 0;
  for (int k = 0; k < 300; ++k) {
    const auto side = [&](int64_t most) {
      return 1 + static_cast<int64_t>(rng.uniform_below(most));
    };
    JointSample waiting = random_sample(side(40), side(40), rng);
    if (k % 5 != 0) {
      ASSERT_TRUE(resize_joint_sample("op", waiting, side(90), side(90), k % 4 == 1).is_ok());
    }
    waiting.mirrored = k % 2 == 1;
    if (k % 3 != 1) interleave(waiting);
    if (waiting.settled()) continue;
    JointSample whole = settled_whole(waiting);
    const int64_t canvas_width = side(70), canvas_height = side(70);
    const int64_t left = static_cast<int64_t>(rng.uniform_below(waiting.width + 40)) - 20;
    const int64_t top = static_cast<int64_t>(rng.uniform_below(waiting.height + 40)) - 20;
    const CanvasFill fill = {{100, 101, 102}, 9, 255};
    ASSERT_TRUE(
        place_joint_sample("op", waiting, left, top, canvas_width, canvas_height, fill).is_ok());
    ASSERT_TRUE(
        place_joint_sample("op", whole, left, top, canvas_width, canvas_height, fill).is_ok());
    ASSERT_TRUE(waiting.settled());
    ASSERT_EQ(waiting.image, whole.image) << k;
    ASSERT_EQ(waiting.masks, whole.masks) << k;
    ASSERT_EQ(waiting.class_map, whole.class_map) << k;
    ASSERT_EQ(waiting.boxes, whole.boxes) << k;
    ++windows;
  }
  EXPECT_GT(windows, 200);
  JointSample waiting = random_sample(30, 20, rng);  // settling alone: the same as whole
  interleave(waiting);
  ASSERT_TRUE(resize_joint_sample("op", waiting, 47, 13).is_ok());
  waiting.mirrored = true;
  const JointSample whole = settled_whole(waiting);
  ASSERT_TRUE(settle_joint_sample(waiting).is_ok());
  EXPECT_EQ(waiting.image, whole.image);
  EXPECT_EQ(waiting.masks, whole.masks);
  JointSample decoded = random_sample(7, 5, rng);  // the decoded layout alone
  const std::vector<uint8_t> planes = decoded.image;
  interleave(decoded);
  ASSERT_TRUE(settle_joint_sample(decoded).is_ok());
  EXPECT_TRUE(decoded.settled());
  EXPECT_EQ(decoded.image, planes);
}

}  // namespace
}  // namespace stoker::ops
