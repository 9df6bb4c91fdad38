// `stoker convert coco` end to end on a hand-made instances file: the dataset's records, what
// `inspect` and `verify` say of it, and bad annotations and images, each one line naming the
// file and the annotation, exit 1, nothing written. (Records against torchvision and
// pycocotools: python/tests/test_coco_import.py.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "stoker/store/dataset.h"
#include "stoker/store/record_view.h"
#include "stoker/store/schema.h"
#include "stoker/testing/cli_run.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::expect_one_line_error;
using testing::run;
using testing::RunResult;

// Two 64x48 JPEGs (ids 3 and 1) and `objects`' annotations, in dir/coco.
void make_coco_files(const testing::TempDir& dir, const std::string& objects) {
  fs::create_directories(dir / "coco/images");
  const std::vector<uint8_t> jpeg = image::testing::encode_jpeg({});
  for (const char* name : {"a.jpg", "b.jpg"})
    throw_if_error(
        write_file_atomically(dir / "coco/images/" + name, std::string(jpeg.begin(), jpeg.end())));
  const std::string json = fmt::format(
      R"({{"images": [{{"id": 3, "file_name": "a.jpg", "width": 64, "height": 48}},
                     {{"id": 1, "file_name": "b.jpg", "width": 64, "height": 48}}],
          "categories": [{{"id": 1, "name": "cat"}}, {{"id": 4, "name": "dog"}}],
          "annotations": [{}]}})",
      objects);
  throw_if_error(write_file_atomically(dir / "coco/instances.json", json));
}

std::string convert_coco_args(const testing::TempDir& dir) {
  return "convert coco --images " + dir / "coco/images" + " --annotations " +
         dir / "coco/instances.json" + " --out " + dir / "out";
}

constexpr const char* kTwoObjects =
    R"({"id": 7, "image_id": 3, "category_id": 4, "bbox": [1.5, 2, 10, 20], "area": 150,
        "iscrowd": 0, "segmentation": [[1.5, 2, 11.5, 2, 11.5, 22, 1.5, 22]]},
       {"id": 8, "image_id": 3, "category_id": 1, "bbox": [0, 0, 4, 4], "area": 16,
        "iscrowd": 1, "segmentation": {"counts": [0, 4, 44, 4, 44, 4, 44, 4, 2924],
                                       "size": [48, 64]}})";

TEST(CocoCliTest, ConvertsOneRecordPerImageByIdThenInspectAndVerify) {
  testing::TempDir dir;
  make_coco_files(dir, kTwoObjects);
  const RunResult convert = run(convert_coco_args(dir), dir);
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  EXPECT_EQ(convert.out.rfind("wrote 2 images with 2 objects of 2 categories to " + dir / "out", 0),
            0u)
      << convert.out;
  const RunResult inspect = run("inspect " + dir / "out", dir);
  EXPECT_NE(inspect.out.find("image bytes, image_id int64, height int64, width int64, boxes "
                             "float32[N,4], labels int64[N], area float32[N], iscrowd int64[N], "
                             "masks bytes\n"),
            std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("classes   5: __background__, cat, N/A, N/A, dog\n"),
            std::string::npos)
      << inspect.out;
  EXPECT_EQ(run("verify " + dir / "out", dir).exit_code, 0);

  const auto dataset = Dataset::open(dir / "out").value_or_throw();
  ASSERT_EQ(dataset->size(), 2u);
  const Schema& schema = dataset->schema();
  const auto scalar = [&](uint64_t i, const char* name) {
    int64_t v = 0;
    std::memcpy(&v, fixed_field(schema, dataset->record(i), schema.find(name)), sizeof v);
    return v;
  };
  const auto rows = [&](uint64_t i, const char* name) {
    return variable_rows(schema, dataset->record(i), schema.find(name)).value_or_throw();
  };
  const auto bytes = [&](uint64_t i, const char* name) {
    return variable_field(schema, dataset->record(i), schema.find(name)).value_or_throw();
  };
  EXPECT_EQ(scalar(0, "image_id"), 1);  // by id, as CocoDetection lists them
  EXPECT_EQ(scalar(1, "image_id"), 3);
  EXPECT_EQ(rows(0, "boxes").rows, 0u);
  ASSERT_EQ(rows(1, "boxes").rows, 2u);
  float xyxy[8];
  std::memcpy(xyxy, rows(1, "boxes").bytes.data, sizeof xyxy);
  const float want[8] = {1.5f, 2, 11.5f, 22, 0, 0, 4, 4};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(xyxy[i], want[i]) << i;
  int64_t labels[2], crowd[2];
  std::memcpy(labels, rows(1, "labels").bytes.data, sizeof labels);
  std::memcpy(crowd, rows(1, "iscrowd").bytes.data, sizeof crowd);
  EXPECT_EQ(labels[0], 4);
  EXPECT_EQ(labels[1], 1);
  EXPECT_EQ(crowd[0], 0);
  EXPECT_EQ(crowd[1], 1);
  EXPECT_EQ(bytes(0, "masks").size, 0u);  // no objects, no PNG
  EXPECT_GT(bytes(1, "masks").size, 0u);
}

// --drop-empty keeps an image only if one of its boxes is wider and taller than 1 pixel, as
// written (the detection reference's training rule): a box of width exactly 1 does not count,
// one of 1.01 does; crowds count.
TEST(CocoCliTest, DropEmptyLeavesOutImagesWithoutABoxWiderAndTallerThanOnePixel) {
  const struct {
    const char* objects;
    std::vector<int64_t> kept;  // image ids, in order
  } cases[] = {
      {kTwoObjects, {3}},  // image 1 has no object
      {R"({"id": 7, "image_id": 3, "category_id": 4, "bbox": [1.5, 2, 1, 20], "area": 20,
           "iscrowd": 0},
          {"id": 8, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 1], "area": 4,
           "iscrowd": 0})",
       {}},  // every image: refused
      {R"({"id": 7, "image_id": 3, "category_id": 4, "bbox": [1.5, 2, 1, 20], "area": 20,
           "iscrowd": 0},
          {"id": 9, "image_id": 3, "category_id": 4, "bbox": [30, 2, 1.01, 1.01], "area": 1,
           "iscrowd": 1},
          {"id": 8, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4], "area": 16,
           "iscrowd": 0})",
       {1, 3}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.objects);
    testing::TempDir dir;
    make_coco_files(dir, c.objects);
    const RunResult convert = run(convert_coco_args(dir) + " --drop-empty", dir);
    if (c.kept.empty()) {
      expect_one_line_error(convert, dir / "coco/instances.json" +
                                         ": no image has an object wider and taller than 1 "
                                         "pixel: --drop-empty leaves none");
      EXPECT_FALSE(fs::exists(dir / "out"));
      continue;
    }
    ASSERT_EQ(convert.exit_code, 0) << convert.err;
    EXPECT_NE(convert.out.find(fmt::format("({} without objects left out)", 2 - c.kept.size())),
              std::string::npos)
        << convert.out;
    const auto dataset = Dataset::open(dir / "out").value_or_throw();
    std::vector<int64_t> ids;
    for (uint64_t i = 0; i < dataset->size(); ++i) {
      int64_t id = 0;
      std::memcpy(
          &id,
          fixed_field(dataset->schema(), dataset->record(i), dataset->schema().find("image_id")),
          sizeof id);
      ids.push_back(id);
    }
    EXPECT_EQ(ids, c.kept);
  }
}

// --v1-targets stores what the v1 detection reference's ConvertCocoPolysToMask makes: the crowd
// left out, a box past the 64x48 image's right and bottom edges clamped (in float32), boxes of no
// width or starting at the right edge left out with their masks. (Against the reference's own
// step: python/tests/test_reference_v1_detection.py.)
TEST(CocoCliTest, V1TargetsAreTheV1ReferencesClampedBoxesWithoutCrowds) {
  testing::TempDir dir;
  make_coco_files(dir, std::string(kTwoObjects) + R"(,
      {"id": 9, "image_id": 3, "category_id": 1, "bbox": [60.25, 40, 4.5, 8.5], "area": 9,
       "iscrowd": 0, "segmentation": [[60.25, 40, 63, 40, 63, 47]]},
      {"id": 10, "image_id": 3, "category_id": 4, "bbox": [7, 7, 0, 9], "area": 0,
       "iscrowd": 0, "segmentation": [[7, 7, 8, 7, 8, 16]]},
      {"id": 11, "image_id": 3, "category_id": 4, "bbox": [64, 2, 0.5, 4], "area": 2,
       "iscrowd": 0, "segmentation": [[63, 2, 64, 2, 64, 6]]})");
  const RunResult convert = run(convert_coco_args(dir) + " --v1-targets", dir);
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  EXPECT_EQ(convert.out.rfind("wrote 2 images with 2 objects of 2 categories", 0), 0u)
      << convert.out;
  const auto dataset = Dataset::open(dir / "out").value_or_throw();
  const Schema& schema = dataset->schema();
  const auto rows = [&](const char* name) {
    return variable_rows(schema, dataset->record(1), schema.find(name)).value_or_throw();
  };
  ASSERT_EQ(rows("boxes").rows, 2u);
  float xyxy[8];
  std::memcpy(xyxy, rows("boxes").bytes.data, sizeof xyxy);
  const float want[8] = {1.5f, 2, 11.5f, 22, 60.25f, 40, 64, 48};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(xyxy[i], want[i]) << i;
  int64_t labels[2];
  std::memcpy(labels, rows("labels").bytes.data, sizeof labels);
  EXPECT_EQ(labels[0], 4);
  EXPECT_EQ(labels[1], 1);
  EXPECT_EQ(rows("iscrowd").rows, 2u);
}

TEST(CocoCliTest, BadAnnotationsAreOneLineNamingTheFileAndTheAnnotation) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"id": 7, "image_id": 3, "category_id": 2, "bbox": [1, 2, 3, 4]})",
       "instances.json: annotation 7 (image 3): category 2 is not in categories"},
      {R"({"id": 7, "image_id": 3, "category_id": 1, "bbox": [60, 2, 30, 4]})",
       "instances.json: annotation 7 (image 3): box [60, 2, 30, 4] is not inside the 64x48 "
       "image"},
      {R"({"id": 7, "image_id": 3, "category_id": 1, "bbox": [1, 2, 3, 4],
           "segmentation": {"counts": [0, 5], "size": [48, 64]}})",
       "instances.json: annotation 7 (image 3): segmentation: "},
      {R"({"id": 7, "image_id": 9, "category_id": 1, "bbox": [1, 2, 3, 4]})",
       "instances.json: annotation 7: image 9 is not in images"},
  };
  for (const auto& [object, words] : cases) {
    testing::TempDir dir;
    make_coco_files(dir, object);
    const RunResult convert = run(convert_coco_args(dir), dir);
    expect_one_line_error(convert, words);
    EXPECT_FALSE(fs::exists(dir / "out")) << words;
  }
}

TEST(CocoCliTest, AnImageThatDisagreesWithItsAnnotationIsOneLine) {
  testing::TempDir dir;
  make_coco_files(dir, kTwoObjects);
  image::testing::JpegSpec spec;
  spec.width = 65;
  const std::vector<uint8_t> wide = image::testing::encode_jpeg(spec);
  throw_if_error(
      write_file_atomically(dir / "coco/images/a.jpg", std::string(wide.begin(), wide.end())));
  expect_one_line_error(
      run(convert_coco_args(dir), dir),
      "a.jpg (image 3): the image is 65x48, but " + dir / "coco/instances.json" + " says 64x48");
  EXPECT_FALSE(fs::exists(dir / "out"));
  fs::remove(dir / "coco/images/b.jpg");
  expect_one_line_error(run(convert_coco_args(dir), dir), "b.jpg (image 1): ");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
}  // namespace stoker
