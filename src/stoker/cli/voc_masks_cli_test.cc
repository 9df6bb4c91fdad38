// `stoker convert voc` and `stoker convert masks` end to end on hand-made files: the datasets and
// what `inspect` and `verify` say of them, and bad input as one line naming the files, exit 1,
// nothing written. (Records against torchvision and PIL: python/tests/test_voc_import.py and
// test_mask_folder_import.py.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

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

void put_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  throw_if_error(write_file_atomically(path, std::string(bytes.begin(), bytes.end())));
}

void put_text(const std::string& path, const std::string& text) {
  put_file(path, std::vector<uint8_t>(text.begin(), text.end()));
}

// A VOC2012 folder of one 64x48 image with a dog, its split list "train".
void make_voc(const testing::TempDir& dir, const std::string& name = "dog") {
  put_file(dir / "VOC2012/JPEGImages/a.jpg", image::testing::encode_jpeg({}));
  put_text(dir / "VOC2012/Annotations/a.xml",
           "<annotation><size><width>64</width><height>48</height></size><object><name>" + name +
               "</name><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>30</xmax><ymax>40</ymax>"
               "</bndbox></object></annotation>");
  put_text(dir / "VOC2012/ImageSets/Main/train.txt", "a\n");
}

TEST(VocMasksCliTest, ConvertVocThenInspectAndVerify) {
  testing::TempDir dir;
  make_voc(dir);
  const RunResult convert = run("convert voc " + dir / "VOC2012" + " --out " + dir / "out", dir);
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  EXPECT_EQ(convert.out.rfind("wrote 1 images with 1 objects to " + dir / "out", 0), 0u)
      << convert.out;
  const RunResult inspect = run("inspect " + dir / "out", dir);
  EXPECT_NE(inspect.out.find("schema    image bytes, height int64, width int64, boxes "
                             "float32[N,4], labels int64[N], difficult int64[N]\n"),
            std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("classes   21: __background__, aeroplane"), std::string::npos)
      << inspect.out;
  EXPECT_EQ(run("verify " + dir / "out", dir).exit_code, 0);
}

TEST(VocMasksCliTest, BadVocAndMaskInputIsOneLineWritingNothing) {
  testing::TempDir dir;
  make_voc(dir, "unicorn");
  expect_one_line_error(run("convert voc " + dir / "VOC2012" + " --out " + dir / "out", dir),
                        "a.xml: object 1: class 'unicorn' is not one of VOC's 20");
  EXPECT_FALSE(fs::exists(dir / "out"));
  expect_one_line_error(
      run("convert voc " + dir / "VOC2012" + " --split val --out " + dir / "out", dir),
      "ImageSets/Main/val.txt");
  EXPECT_FALSE(fs::exists(dir / "out"));

  image::testing::PngSpec small;
  small.color_type = 0;  // gray: class indices
  put_file(dir / "masks/a.png", image::testing::encode_png(small));
  const std::string masks_args = "convert masks --images " + dir / "VOC2012/JPEGImages" +
                                 " --masks " + dir / "masks" + " --out " + dir / "out";
  expect_one_line_error(run(masks_args, dir), dir / "masks/a.png is 40x30, but its image " +
                                                  dir / "VOC2012/JPEGImages/a.jpg is 64x48");
  EXPECT_FALSE(fs::exists(dir / "out"));
  small.width = 64;
  small.height = 48;
  put_file(dir / "masks/a.png", image::testing::encode_png(small));
  const RunResult converted = run(masks_args, dir);
  ASSERT_EQ(converted.exit_code, 0) << converted.err;
  EXPECT_EQ(converted.out.rfind("wrote 1 images with their masks to " + dir / "out", 0), 0u)
      << converted.out;
  EXPECT_EQ(run("verify " + dir / "out", dir).exit_code, 0);
}

}  // namespace
}  // namespace stoker
