// joint_canvas.h: a sample placed on a canvas pads where the offset is negative and cuts where it
// is positive, every plane with its own fill, boxes moved, and refuses a canvas of no pixels.
#include "stoker/pipeline/ops/joint_canvas.h"

#include <gtest/gtest.h>

#include <vector>

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

}  // namespace
}  // namespace stoker::ops
