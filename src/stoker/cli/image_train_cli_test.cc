// `stoker train` and `stoker bench loader` on an image dataset end to end: an ImageFolder made
// of small JPEGs and PNGs, converted, then trained (a small CNN for whole epochs with
// evaluation; ResNet-18 at 224 px for a few steps) and benchmarked with the training
// transforms; bad image options give one line and exit 1.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
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

std::string as_string(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// DIR/src/{train,val}/{a,b,c}/ with JPEGs of several sizes (one progressive, one grayscale)
// and a PNG per class, converted into DIR/out/{train,test}.
class ImageTrainCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    for (const char* split : {"train", "val"}) {
      const int per_class = std::string(split) == "train" ? 6 : 2;
      for (const char* cls : {"a", "b", "c"}) {
        for (int i = 0; i < per_class; ++i, ++n) {
          const std::string folder = dir_ / fmt::format("src/{}/{}", split, cls);
          fs::create_directories(folder);
          image::testing::JpegSpec jpeg;
          jpeg.width = 80 + 13 * (n % 5);
          jpeg.height = 60 + 7 * (n % 3);
          jpeg.progressive = n % 7 == 3;
          jpeg.components = n % 11 == 5 ? 1 : 3;
          const bool png = i == 0;
          image::testing::PngSpec spec;
          const std::string bytes = png ? as_string(image::testing::encode_png(spec))
                                        : as_string(image::testing::encode_jpeg(jpeg));
          throw_if_error(
              write_file_atomically(folder + fmt::format("/{}.{}", i, png ? "png" : "jpg"), bytes));
        }
      }
    }
    const RunResult convert =
        run("convert imagefolder " + dir_ / "src" + " --out " + dir_ / "out", dir_);
    ASSERT_EQ(convert.exit_code, 0) << convert.err;
  }
  testing::TempDir dir_;
};

TEST_F(ImageTrainCliTest, CnnTrainsWholeEpochsWithEvaluation) {
  const RunResult r = run("train --data " + dir_ / "out" +
                              " --model cnn --image-size 32 --epochs 2 --batch 6 --workers 1 "
                              "--log " +
                              dir_ / "log.jsonl",
                          dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("trained cnn: 2 epochs"), std::string::npos) << r.out;
  const std::string log = read_file(dir_ / "log.jsonl").value_or_throw();
  const nlohmann::json last = nlohmann::json::parse(log.substr(log.rfind('{')));
  EXPECT_EQ(last["epoch"], 2);
  EXPECT_GE(last["test_accuracy"].get<double>(), 0.0);
  EXPECT_EQ(last["samples"], 18);
  // Normalised with the training split's own statistics, computed at conversion.
  const nlohmann::json run = nlohmann::json::parse(log.substr(0, log.find('\n')));
  const nlohmann::json manifest =
      nlohmann::json::parse(read_file(dir_ / "out/train/manifest.json").value_or_throw());
  EXPECT_EQ(run["config"]["mean"],
            manifest["statistics"]["image"]["mean"].get<std::vector<float>>());
  EXPECT_EQ(run["config"]["std"], manifest["statistics"]["image"]["std"].get<std::vector<float>>());
  EXPECT_EQ(run["config"]["mean_from"], "data");
  EXPECT_NE(r.out.find("from the data's manifest"), std::string::npos) << r.out;
}

TEST_F(ImageTrainCliTest, Resnet18At224RunsAFewSteps) {
  const RunResult r = run("train --data " + dir_ / "out" +
                              " --model resnet18 --image-size 224 --batch 4 --max-steps 2 "
                              "--no-eval --workers 1",
                          dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 steps"), std::string::npos) << r.out;
}

TEST_F(ImageTrainCliTest, BenchLoaderAppliesTheTrainingTransforms) {
  const RunResult r = run("bench loader --data " + dir_ / "out/train" +
                              " --batch 5 --workers 2 --epochs 2 --image-size 48 --json",
                          dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["samples"], 18 * j["epochs"].get<int64_t>());  // more epochs if it was too short
  EXPECT_GT(j["samples_per_s"].get<double>(), 0.0);
  EXPECT_EQ(j["output"], "float32");
  EXPECT_EQ(j["image_transform"]["random_resized_crop"], 48);
  // float32 [3,48,48] and an int64 label per sample.
  EXPECT_NEAR(j["mb_per_s"].get<double>() / j["samples_per_s"].get<double>(),
              (3 * 48 * 48 * 4 + 8) / 1e6, 1e-9);
  EXPECT_FALSE(j.contains("augment"));
  // --augment after the crop, said with all its parameters; the same samples.
  const RunResult augmented =
      run("bench loader --data " + dir_ / "out/train" +
              " --batch 5 --epochs 1 --min-seconds 0 --image-size 48 --json --augment "
              "color_jitter:contrast=0.4",
          dir_);
  ASSERT_EQ(augmented.exit_code, 0) << augmented.err;
  const nlohmann::json a = nlohmann::json::parse(augmented.out);
  EXPECT_EQ(
      a["augment"],
      nlohmann::json{"color_jitter:brightness=0,contrast=0.4,saturation=0,hue=0,backend=tensor"});
  EXPECT_EQ(a["samples"], 18);
  EXPECT_NEAR(a["mb_per_s"].get<double>() / a["samples_per_s"].get<double>(),
              (3 * 48 * 48 * 4 + 8) / 1e6, 1e-9);
}

// The image folder read in place (no convert): train/ and val/ found as a converted folder's
// splits, the same samples as the converted dataset's; a bad file named by --on-error.
TEST_F(ImageTrainCliTest, AnImageFolderTrainsAndBenchesInPlace) {
  const std::string train = "train --data " + dir_ / "src" +
                            " --model cnn --image-size 32 --epochs 1 --batch 6 --workers 1 --log " +
                            dir_ / "folder.jsonl";
  const RunResult r = run(train, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("trained cnn: 1 epoch,"), std::string::npos) << r.out;
  const std::string log = read_file(dir_ / "folder.jsonl").value_or_throw();
  const nlohmann::json last = nlohmann::json::parse(log.substr(log.rfind('{')));
  EXPECT_EQ(last["samples"], 18);
  EXPECT_TRUE(last.contains("test_accuracy"));
  const RunResult bench = run("bench loader --data " + dir_ / "src/train" +
                                  " --batch 5 --epochs 1 --min-seconds 0 --image-size 48 --json",
                              dir_);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_EQ(nlohmann::json::parse(bench.out)["samples"], 18);
  throw_if_error(write_file_atomically(dir_ / "src/train/b/3.jpg", "not an image"));
  expect_one_line_error(run("bench loader --data " + dir_ / "src/train" +
                                " --batch 5 --epochs 1 --min-seconds 0 --image-size 48",
                            dir_),
                        dir_ / "src/train/b/3.jpg: ");
}

// A checkpoint of an image folder read in place resumes while its files are unchanged, and is
// refused in one line naming the image rewritten since.
TEST_F(ImageTrainCliTest, AResumeOfAnImageFolderIsRefusedAfterAnImageChanged) {
  const std::string train = "train --data " + dir_ / "src" +
                            " --model cnn --image-size 16 --batch 6 --workers 1 --checkpoint-dir " +
                            dir_ / "ckpt";
  const RunResult first = run(train + " --epochs 1", dir_);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const RunResult same = run(train + " --epochs 2 --resume", dir_);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  const std::string image = dir_ / "src/train/b/3.jpg";
  throw_if_error(write_file_atomically(image, read_file(dir_ / "src/train/a/2.jpg").value()));
  expect_one_line_error(run(train + " --epochs 3 --resume", dir_),
                        "belongs to another run: other training data: " + image +
                            " changed (its size or modification time differs)");
}

// Truncates every cached unit of the transcode cache under `cache` to half its size.
void damage_transcoded_units(const std::string& cache) {
  for (const fs::directory_entry& entry : fs::directory_iterator(cache + "/transcoded"))
    if (entry.path().extension() == ".shard") fs::resize_file(entry.path(), entry.file_size() / 2);
}

// The lines of `text` that hold `part`.
std::vector<std::string> lines_with(const std::string& text, const std::string& part) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(part) != std::string::npos) lines.push_back(line);
  return lines;
}

// With --transcode-cache, damaged cached units are rebuilt and each data source's are told in
// one note on stdout, by bench loader and by train (its splits' each), nothing on stderr.
TEST_F(ImageTrainCliTest, DamagedTranscodedUnitsAreNotesOfBenchAndTrain) {
  const std::string in_place =
      " --image-size 32 --batch 6 --workers 1 --epochs 1 --transcode-cache "
      "--cache-dir " +
      dir_ / "cache";
  const std::string train = "train --data " + dir_ / "src" + " --model cnn" + in_place;
  ASSERT_EQ(run(train, dir_).exit_code, 0);
  damage_transcoded_units(dir_ / "cache");
  const RunResult bench =
      run("bench loader --data " + dir_ / "src/train" + " --min-seconds 0" + in_place, dir_);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const std::vector<std::string> told = lines_with(bench.out, "transcode cache");
  ASSERT_EQ(told.size(), 1u) << bench.out;
  EXPECT_EQ(told[0].rfind("note: transcode cache: " + dir_ / "cache/transcoded/", 0), 0u);
  EXPECT_NE(told[0].find(" is damaged, rebuilt: "), std::string::npos) << told[0];
  EXPECT_EQ(bench.err.find("transcode cache"), std::string::npos) << bench.err;

  damage_transcoded_units(dir_ / "cache");
  const RunResult r = run(train, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> notes = lines_with(r.out, "transcode cache");
  EXPECT_EQ(notes.size(), 2u) << r.out;  // train/'s and val/'s
  for (const std::string& note : notes)
    EXPECT_EQ(note.rfind("note: transcode cache: ", 0), 0u) << note;
  EXPECT_EQ(r.err.find("transcode cache"), std::string::npos) << r.err;
}

// doctor on an image folder read in place with --transcode-cache: the damaged cached units the
// first measured run rebuilds are one note, in the text (after the verdict) and in the JSON.
TEST_F(ImageTrainCliTest, DoctorOnAnImageFolderSaysTheSourcesNotes) {
  const std::string doctor = "doctor --data " + dir_ / "src" +
                             " --model cnn --image-size 32 --batch 6 --workers 1 --steps 2 "
                             "--seconds 0.05 --transcode-cache --cache-dir " +
                             dir_ / "cache";
  const RunResult first = run(doctor, dir_);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(lines_with(first.out, "note:").empty()) << first.out;
  EXPECT_NE(first.out.find("data                   " + dir_ / "src/train"), std::string::npos)
      << first.out;

  damage_transcoded_units(dir_ / "cache");
  const RunResult text = run(doctor, dir_);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::vector<std::string> told = lines_with(text.out, "transcode cache");
  ASSERT_EQ(told.size(), 1u) << text.out;
  EXPECT_EQ(told[0].rfind("note: transcode cache: " + dir_ / "cache/transcoded/", 0), 0u);
  EXPECT_NE(told[0].find(" is damaged, rebuilt: "), std::string::npos) << told[0];
  EXPECT_LT(text.out.find("verdict: "), text.out.find(told[0]));
  EXPECT_EQ(text.err.find("transcode cache"), std::string::npos) << text.err;

  damage_transcoded_units(dir_ / "cache");
  const RunResult json = run(doctor + " --json", dir_);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json notes = nlohmann::json::parse(json.out).at("notes");
  ASSERT_EQ(notes.size(), 1u) << json.out;
  EXPECT_EQ(notes[0].get<std::string>().rfind("transcode cache: ", 0), 0u) << notes[0];
}

// The reference's --auto-augment ta_wide (the native TrivialAugmentWide, with --interpolation)
// and --label-smoothing train, and the log says them in full.
TEST_F(ImageTrainCliTest, ReferenceRecipeFlagsTrainAndAreLogged) {
  const RunResult r = run("train --data " + dir_ / "out" +
                              " --model cnn --image-size 16 --batch 6 --workers 1 --epochs 1 "
                              "--auto-augment ta_wide --label-smoothing 0.1 --augment "
                              "random_invert:p=0.5 --log " +
                              dir_ / "recipe.jsonl",
                          dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string log = read_file(dir_ / "recipe.jsonl").value_or_throw();
  const nlohmann::json config = nlohmann::json::parse(log.substr(0, log.find('\n')))["config"];
  EXPECT_EQ(
      config["augment"],
      (nlohmann::json{
          "trivial_augment_wide:num_magnitude_bins=31,interpolation=bilinear,fill=[],version=v1,"
          "backend=pil",
          "random_invert:p=0.5"}));
  EXPECT_EQ(config["label_smoothing"], 0.1);
  // The swin and maxvit commands' --interpolation bicubic reaches the policy too.
  const RunResult bicubic = run("train --data " + dir_ / "out" +
                                    " --model cnn --image-size 16 --batch 6 --epochs 1 "
                                    "--auto-augment ra --interpolation bicubic --log " +
                                    dir_ / "bicubic.jsonl",
                                dir_);
  ASSERT_EQ(bicubic.exit_code, 0) << bicubic.err;
  const std::string bicubic_log = read_file(dir_ / "bicubic.jsonl").value_or_throw();
  EXPECT_NE(bicubic_log.find("rand_augment:num_ops=2,magnitude=9,num_magnitude_bins=31,"
                             "interpolation=bicubic"),
            std::string::npos)
      << bicubic_log.substr(0, 600);
  // timm's RandAugment string, as its --aa: the native timm_rand_augment, its fill timm's
  // img_mean from --mean; a wrong string is one line.
  const RunResult timm =
      run("train --data " + dir_ / "out" +
              " --model cnn --image-size 16 --batch 6 --epochs 1 --auto-augment "
              "rand-m9-mstd0.5-inc1 --mean 0.485 0.456 0.406 --std 0.229 0.224 0.225 --log " +
              dir_ / "timm.jsonl",
          dir_);
  ASSERT_EQ(timm.exit_code, 0) << timm.err;
  const std::string timm_log = read_file(dir_ / "timm.jsonl").value_or_throw();
  EXPECT_NE(timm_log.find("timm_rand_augment:config=rand-m9-mstd0.5-inc1,interpolation=bilinear,"
                          "fill=[124,116,104]"),
            std::string::npos)
      << timm_log.substr(0, 600);
  const RunResult wrong =
      run("train --data " + dir_ / "out" +
              " --model cnn --image-size 16 --batch 6 --epochs 1 --auto-augment rand-q9",
          dir_);
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("timm_rand_augment"), std::string::npos) << wrong.err;
  EXPECT_EQ(std::count(wrong.err.begin(), wrong.err.end(), '\n'), 1) << wrong.err;
}

// --interpolation bicubic trains, and a checkpoint holds it: a resume with another filter is
// refused in one line naming it.
TEST_F(ImageTrainCliTest, BicubicTrainsAndItsCheckpointKeepsTheFilter) {
  const std::string train = "train --data " + dir_ / "out" +
                            " --model cnn --image-size 16 --batch 6 --workers 1 --checkpoint-dir " +
                            dir_ / "ckpt";
  const RunResult bicubic = run(train + " --epochs 1 --interpolation bicubic", dir_);
  ASSERT_EQ(bicubic.exit_code, 0) << bicubic.err;
  const RunResult resumed = run(train + " --epochs 2 --resume", dir_);
  EXPECT_EQ(resumed.exit_code, 1);
  EXPECT_NE(resumed.err.find("--interpolation bicubic (this run: bilinear)"), std::string::npos)
      << resumed.err;
  const RunResult same = run(train + " --epochs 2 --resume --interpolation bicubic", dir_);
  EXPECT_EQ(same.exit_code, 0) << same.err;
}

// The reference's --mixup-alpha, --cutmix-alpha and --random-erase train (soft targets, the
// loader normalising), are logged, and a checkpoint holds them: a resume with others is refused
// in one line naming them.
TEST_F(ImageTrainCliTest, MixupCutmixAndRandomEraseTrainAndTheCheckpointKeepsThem) {
  const std::string train = "train --data " + dir_ / "out" +
                            " --model cnn --image-size 16 --batch 6 --workers 2 --checkpoint-dir " +
                            dir_ / "ckpt";
  const std::string recipe =
      " --auto-augment ta_wide --random-erase 0.1 --mixup-alpha 0.2 --cutmix-alpha 1.0 "
      "--label-smoothing 0.1";
  const RunResult mixed = run(train + " --epochs 1 --log " + dir_ / "mixed.jsonl" + recipe, dir_);
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  const std::string log = read_file(dir_ / "mixed.jsonl").value_or_throw();
  const nlohmann::json config = nlohmann::json::parse(log.substr(0, log.find('\n')))["config"];
  EXPECT_EQ(config["mixup_alpha"], 0.2);
  EXPECT_EQ(config["cutmix_alpha"], 1.0);
  EXPECT_EQ(config["random_erase"], 0.1);
  const RunResult resumed = run(train + " --epochs 2 --resume --label-smoothing 0.1", dir_);
  EXPECT_EQ(resumed.exit_code, 1);
  for (const char* setting : {"--mixup-alpha 0.2 (this run: 0)", "--cutmix-alpha 1 (this run: 0)",
                              "--random-erase 0.1 (this run: 0)"})
    EXPECT_NE(resumed.err.find(setting), std::string::npos) << resumed.err;
  const RunResult same = run(train + " --epochs 2 --resume" + recipe, dir_);
  EXPECT_EQ(same.exit_code, 0) << same.err;
  expect_one_line_error(run(train + " --epochs 1 --mixup-alpha -1", dir_), "--mixup-alpha");
  expect_one_line_error(run(train + " --epochs 1 --random-erase 2", dir_), "--random-erase");
}

// The reference's --train-crop-size, --val-resize-size and --val-crop-size: training crops of
// one size, evaluation's of another (resnet18 takes both; the cnn, made for one size, is refused
// in one line), logged and kept by the checkpoint.
TEST_F(ImageTrainCliTest, TrainAndValidationCropSizesAreTheReferences) {
  const std::string train = "train --data " + dir_ / "out" +
                            " --model resnet18 --batch 6 --workers 1 --checkpoint-dir " +
                            dir_ / "ckpt";
  const std::string sizes = " --train-crop-size 24 --val-resize-size 36 --val-crop-size 32";
  const RunResult r = run(train + " --epochs 1 --log " + dir_ / "sizes.jsonl" + sizes, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string log = read_file(dir_ / "sizes.jsonl").value_or_throw();
  const nlohmann::json config = nlohmann::json::parse(log.substr(0, log.find('\n')))["config"];
  EXPECT_EQ(config["train_crop_size"], 24);
  EXPECT_EQ(config["val_resize_size"], 36);
  EXPECT_EQ(config["val_crop_size"], 32);
  const RunResult resumed =
      run(train +
              " --epochs 2 --resume --train-crop-size 28 --val-resize-size 36 "
              "--val-crop-size 32",
          dir_);
  EXPECT_EQ(resumed.exit_code, 1);
  EXPECT_NE(resumed.err.find("--train-crop-size 24 (this run: 28)"), std::string::npos)
      << resumed.err;
  EXPECT_EQ(run(train + " --epochs 2 --resume" + sizes, dir_).exit_code, 0);
  expect_one_line_error(run("train --data " + dir_ / "out" +
                                " --model cnn --batch 6 --epochs 1 --train-crop-size 16 "
                                "--val-crop-size 24",
                            dir_),
                        "model cnn takes inputs of one size: --val-crop-size 24 needs "
                        "--train-crop-size 24 too");
  expect_one_line_error(
      run("train --data " + dir_ / "out" + " --model cnn --epochs 1 --val-crop-size 0", dir_),
      "--val-crop-size");
}

TEST_F(ImageTrainCliTest, BadImageOptionsAreOneLine) {
  expect_one_line_error(
      run("train --data " + dir_ / "out" + " --model cnn --image-size 0 --epochs 1", dir_),
      "--image-size must be at least 1");
  expect_one_line_error(
      run("train --data " + dir_ / "out" + " --model cnn --image-size 16 --crop-scale 0 --epochs 1",
          dir_),
      "scale");
  expect_one_line_error(
      run("train --data " + dir_ / "out" + " --model cnn --image-size 16 --flip 2 --epochs 1",
          dir_),
      "--flip must be at most 1");
  expect_one_line_error(run("train --data " + dir_ / "out" +
                                " --model cnn --image-size 16 --crop-ratio-min 2 --epochs 1",
                            dir_),
                        "--crop-ratio-min 2 is above --crop-ratio-max 1.33");
}

}  // namespace
}  // namespace stoker
