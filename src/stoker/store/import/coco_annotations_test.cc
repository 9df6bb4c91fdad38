// COCO's instances JSON: images by id, objects in the file's order with their fields as
// written, and each kind of bad annotation one line naming the file and the annotation.
#include "stoker/store/import/coco_annotations.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "stoker/store/dataset_summary.h"
#include "stoker/testing/build_paths.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

using Json = nlohmann::json;

Json small_coco() {
  return Json::parse(R"({
    "images": [{"id": 9, "file_name": "b/9.jpg", "width": 8, "height": 6},
               {"id": 2, "file_name": "2.jpg", "width": 10, "height": 4}],
    "categories": [{"id": 3, "name": "cat"}, {"id": 1, "name": "dog"}],
    "annotations": [
      {"id": 7, "image_id": 9, "category_id": 3, "bbox": [1, 1, 2, 3], "area": 5.5,
       "iscrowd": 0, "segmentation": [[1, 1, 3, 1, 3, 4]]},
      {"id": 4, "image_id": 2, "category_id": 1, "bbox": [0, 0, 10, 4], "iscrowd": 1,
       "segmentation": {"counts": [4, 36], "size": [4, 10]}},
      {"id": 5, "image_id": 9, "category_id": 1, "bbox": [-0.5, 0, 8.9, 6],
       "segmentation": {"counts": "04", "size": [6, 8]}}]})");
}

std::string refusal(const Json& json) {
  const Result<CocoAnnotations> parsed = parse_coco_annotations(json.dump(), "ann.json");
  return parsed.is_ok() ? "accepted" : parsed.status().message();
}

TEST(CocoAnnotationsTest, ImagesByIdObjectsInFileOrderFieldsAsWritten) {
  const CocoAnnotations coco = parse_coco_annotations(small_coco().dump(), "ann.json").value();
  ASSERT_EQ(coco.images.size(), 2u);
  EXPECT_EQ(coco.images[0].id, 2);
  EXPECT_EQ(coco.images[1].file_name, "b/9.jpg");
  ASSERT_EQ(coco.categories.size(), 2u);
  EXPECT_EQ(coco.categories[0].name, "cat");
  const std::vector<CocoObject>& objects = coco.images[1].objects;
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects[0].id, 7);
  EXPECT_EQ(objects[1].id, 5);
  EXPECT_EQ(objects[0].category_id, 3);
  EXPECT_EQ(objects[0].area, 5.5);
  EXPECT_EQ(objects[1].area, 8.9 * 6);  // none written: the box's
  EXPECT_FALSE(objects[0].crowd);
  EXPECT_TRUE(coco.images[0].objects[0].crowd);
  EXPECT_EQ(objects[0].polygons.size(), 1u);
  EXPECT_EQ(objects[1].counts_text, "04");
  EXPECT_EQ(coco.images[0].objects[0].counts, (std::vector<int64_t>{4, 36}));
}

TEST(CocoAnnotationsTest, ObjectsPaintTheirMasks) {
  const CocoAnnotations coco = parse_coco_annotations(small_coco().dump(), "ann.json").value();
  const CocoImage& wide = coco.images[0];
  std::vector<uint8_t> pixels(wide.height * wide.width, 0);
  ASSERT_TRUE(paint_coco_object(wide.objects[0], wide, pixels.data()).is_ok());
  // counts [4, 36]: the first column's 4 pixels are 0, every other pixel 1.
  for (int64_t y = 0; y < wide.height; ++y)
    for (int64_t x = 0; x < wide.width; ++x) EXPECT_EQ(pixels[y * wide.width + x], x > 0 ? 1 : 0);
  const CocoImage& tall = coco.images[1];
  std::vector<uint8_t> none(tall.height * tall.width, 0);
  // "04": 0 zeros, then 4 ones; 48 pixels: the string does not cover the image.
  EXPECT_EQ(
      paint_coco_object(tall.objects[1], tall, none.data()).message(),
      "annotation 5 (image 9): segmentation: run-length counts sum to 4, not 6x8 = 48 pixels");
}

TEST(CocoAnnotationsTest, EachBadAnnotationIsOneLineNamingFileAndAnnotation) {
  Json j = small_coco();
  j["annotations"][0]["category_id"] = 99;
  EXPECT_EQ(refusal(j), "ann.json: annotation 7 (image 9): category 99 is not in categories");
  j = small_coco();
  j["annotations"][1]["image_id"] = 5;
  EXPECT_EQ(refusal(j), "ann.json: annotation 4: image 5 is not in images");
  j = small_coco();
  j["annotations"][0]["bbox"] = {5, 1, 4.5, 3};
  EXPECT_EQ(refusal(j),
            "ann.json: annotation 7 (image 9): box [5, 1, 4.5, 3] is not inside the 8x6 image");
  j["annotations"][0]["bbox"] = {1, 1, -2, 3};
  EXPECT_EQ(refusal(j),
            "ann.json: annotation 7 (image 9): box [1, 1, -2, 3] is not inside the 8x6 image");
  j["annotations"][0]["bbox"] = {1, 1, 2};
  EXPECT_EQ(refusal(j),
            "ann.json: annotation 7 (image 9): \"bbox\" is not 4 numbers [x, y, width, height]");
  j = small_coco();
  j["annotations"][1]["segmentation"]["size"] = {10, 4};
  EXPECT_EQ(
      refusal(j),
      "ann.json: annotation 4 (image 2): segmentation size [10,4] is not the image's [4, 10]");
  j = small_coco();
  j["annotations"][1]["segmentation"]["counts"] = 12;
  EXPECT_EQ(refusal(j),
            "ann.json: annotation 4 (image 2): \"counts\" is neither a list nor a string");
  j = small_coco();
  j["annotations"][0]["segmentation"] = {{1, "x", 3}};
  EXPECT_EQ(refusal(j),
            "ann.json: annotation 7 (image 9): \"segmentation\" is \"x\", not a number");
  j = small_coco();
  j["annotations"][0]["iscrowd"] = 2;
  EXPECT_EQ(refusal(j), "ann.json: annotation 7 (image 9): iscrowd 2 is not 0 or 1");
  j = small_coco();
  j["annotations"][2]["id"] = 7;
  EXPECT_EQ(refusal(j), "ann.json: annotation 7 (image 9): is listed twice");
  j = small_coco();
  j["images"][0]["file_name"] = "../../etc/passwd";
  EXPECT_EQ(
      refusal(j),
      "ann.json: image 9: file_name '../../etc/passwd' is not a path inside the images' directory");
  j["images"][0]["file_name"] = "/abs.jpg";
  EXPECT_NE(refusal(j).find("is not a path inside"), std::string::npos);
  j = small_coco();
  j["images"][1]["width"] = 0;
  EXPECT_EQ(refusal(j),
            "ann.json: image 2: size 0x4 is not at least 1x1 and under 2147483648 pixels");
  j = small_coco();
  j["images"][1]["id"] = 9;
  EXPECT_EQ(refusal(j), "ann.json: image 9: is listed twice");
  j = small_coco();
  j.erase("categories");
  EXPECT_EQ(refusal(j), "ann.json: has no \"categories\"");
  j = small_coco();
  j["images"] = Json::array();
  j["annotations"] = Json::array();
  EXPECT_EQ(refusal(j), "ann.json: \"images\" is empty: no records to convert");
  j = small_coco();
  j.erase("annotations");  // a test split's image info: images without objects
  EXPECT_EQ(refusal(j), "accepted");
  EXPECT_EQ(parse_coco_annotations("{\"images\": [", "ann.json").status().message(),
            "ann.json: not JSON");
  EXPECT_EQ(read_coco_annotations("/nonexistent/ann.json").status().code(), StatusCode::kNotFound);
}

// Class names are indexed by category id (coco.h): a negative id, which wrote before the names'
// list, is refused naming the file and the category.
TEST(CocoAnnotationsTest, ANegativeCategoryIdIsOneLineNamingTheFileAndCategory) {
  for (const int64_t id : {int64_t{-1}, int64_t{-5}, std::numeric_limits<int64_t>::min()}) {
    Json j = small_coco();
    j["categories"][0]["id"] = id;
    j["annotations"][0]["category_id"] = id;
    EXPECT_EQ(refusal(j), fmt::format("ann.json: category {}: id is negative", id));
  }
}

// A category id past the most classes a dataset names is refused, naming the file and the
// category, rather than sizing the names' list by it; ids up to it stay the labels (as
// torchvision's keep them).
TEST(CocoAnnotationsTest, ACategoryIdPastTheClassBoundIsOneLineNamingTheFileAndCategory) {
  for (const int64_t id : {kMaxClasses, int64_t{(1u << 31) - 1}, int64_t{1} << 62}) {
    Json j = small_coco();
    j["categories"][0]["id"] = id;
    j["annotations"][0]["category_id"] = id;
    EXPECT_EQ(refusal(j), fmt::format("ann.json: category {}: id is over 65535: class names are "
                                      "indexed by id, at most 65536 of them",
                                      id));
  }
  Json j = small_coco();
  j["categories"][0]["id"] = kMaxClasses - 1;
  j["annotations"][0]["category_id"] = kMaxClasses - 1;
  const CocoAnnotations coco = parse_coco_annotations(j.dump(), "ann.json").value();
  EXPECT_EQ(coco.images[1].objects[0].category_id, kMaxClasses - 1);
}

// Each object's mask as pycocotools' COCO.annToMask gives it (what torchvision's detection
// reference and its v2 COCO wrapper decode), written row-major to DIR/masks/ANNOTATION_ID.
constexpr const char* kAnnToMaskScript = R"(
import os, sys
from pycocotools.coco import COCO
coco = COCO(sys.argv[1] + "/annotations/instances.json")
os.makedirs(sys.argv[1] + "/masks")
for ann in coco.anns.values():
    coco.annToMask(ann).tofile(f"{sys.argv[1]}/masks/{ann['id']}")
)";

// A COCO-shaped set from bench/make_coco_set.py (polygons past the edges, several polygons to an
// object, crowds as plain counts): every object's mask is pycocotools' own.
TEST(CocoAnnotationsTest, AGeneratedSetsMasksArePycocotoolsAnnToMask) {
  stoker::testing::TempDir dir;
  const std::string set = dir / "coco";
  std::ofstream(dir / "masks.py") << kAnnToMaskScript;
  const std::string make = std::string(STOKER_PYTHON) + " " + stoker::testing::kSourceDir +
                           "/bench/make_coco_set.py " + set + " --images 24 --seed 3 > /dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  const std::string masks =
      std::string(STOKER_PYTHON) + " " + (dir / "masks.py") + " " + set + " > /dev/null";
  ASSERT_EQ(std::system(masks.c_str()), 0) << masks;
  const CocoAnnotations coco = read_coco_annotations(set + "/annotations/instances.json").value();
  ASSERT_EQ(coco.images.size(), 24u);
  int objects = 0, crowds = 0, multi = 0;
  for (const CocoImage& image : coco.images) {
    for (const CocoObject& object : image.objects) {
      std::vector<uint8_t> pixels(image.height * image.width, 0);
      ASSERT_TRUE(paint_coco_object(object, image, pixels.data()).is_ok()) << object.id;
      std::ifstream in(set + "/masks/" + std::to_string(object.id), std::ios::binary);
      const std::vector<uint8_t> expected{std::istreambuf_iterator<char>(in),
                                          std::istreambuf_iterator<char>()};
      ASSERT_EQ(pixels, expected) << "annotation " << object.id;
      ++objects;
      crowds += object.crowd;
      multi += object.polygons.size() > 1;
    }
  }
  EXPECT_GT(objects, 80);
  EXPECT_GT(multi + crowds, 0);
}

}  // namespace
}  // namespace stoker
