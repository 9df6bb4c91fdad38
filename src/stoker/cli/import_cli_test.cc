// `stoker convert imagefolder` and `stoker convert cifar10` end to end: the datasets, what
// `inspect` and `verify` say of them, and bad inputs — every bad file listed on its own line,
// then one line of summary, exit 1 and nothing written; or one line naming the file.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "stoker/store/dataset.h"
#include "stoker/store/image_record.h"
#include "stoker/store/import/cifar10.h"
#include "stoker/store/import/image_folder.h"
#include "stoker/testing/build_paths.h"
#include "stoker/testing/cli_run.h"
#include "stoker/testing/special_files.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::expect_one_line_error;
using testing::run;
using testing::RunResult;

void put(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  throw_if_error(write_file_atomically(path, bytes));
}

std::string small_jpeg() {
  const std::vector<uint8_t> bytes = image::testing::encode_jpeg({});
  return std::string(bytes.begin(), bytes.end());
}

std::string small_png() {
  const std::vector<uint8_t> bytes = image::testing::encode_png({});
  return std::string(bytes.begin(), bytes.end());
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

TEST(ImportCliTest, ImageFolderSplitsThenInspectAndVerify) {
  testing::TempDir dir;
  for (const char* split : {"train", "val"}) {
    for (const char* cls : {"cat", "dog", "owl"}) {
      put(dir / fmt::format("src/{}/{}/a.jpg", split, cls), small_jpeg());
      put(dir / fmt::format("src/{}/{}/b.png", split, cls), small_png());
    }
  }
  put(dir / "src/train/cat/notes.txt", "ignored");
  RunResult convert = run("convert imagefolder " + dir / "src" + " --out " + dir / "out", dir);
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  EXPECT_EQ(
      convert.out.rfind(
          "wrote 12 images of 3 classes to " + dir / "out/train and " + dir / "out/test: ", 0),
      0u)
      << convert.out;
  EXPECT_NE(convert.out.find("1 file ignored (no image extension)"), std::string::npos);
  EXPECT_EQ(convert.err, "") << "no progress bar when stderr is not a terminal";

  RunResult inspect = run("inspect " + dir / "out", dir);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("classes   3: cat, dog, owl\n"), std::string::npos) << inspect.out;
  EXPECT_EQ(inspect.out.find("order "), std::string::npos) << "the folder's order: no line";
  EXPECT_NE(inspect.out.find("schema    image bytes, label int64, height int64, width int64, "
                             "original_size int64, original_checksum int64"),
            std::string::npos)
      << inspect.out;
  for (const char* split : {"/out/train", "/out/test"}) {
    RunResult verify = run("verify " + dir / split, dir);
    EXPECT_EQ(verify.exit_code, 0) << verify.err;
  }
  ASSERT_EQ(run("convert imagefolder " + dir / "src" + " --out " + dir / "shuffled" +
                    " --record-order shuffled --seed 5",
                dir)
                .exit_code,
            0);
  inspect = run("inspect " + dir / "shuffled/train", dir);
  EXPECT_NE(inspect.out.find("order     records shuffled when converted (seed 5), not class by "
                             "class\n"),
            std::string::npos)
      << inspect.out;
  inspect = run("inspect --json " + dir / "shuffled/train", dir);
  EXPECT_EQ(nlohmann::json::parse(inspect.out).at("record_order"),
            nlohmann::json({{"order", "shuffled"}, {"seed", 5}}));
}

// Per channel, the mean and population std of every image under `root` as PIL's
// Image.open(path).convert("RGB") reads it (what torchvision's ImageFolder gives), computed with
// numpy by STOKER_PYTHON: {"mean": [...], "std": [...], "pixels": n}.
nlohmann::json pil_statistics(const std::string& root, const testing::TempDir& dir) {
  const std::string out = dir / "pil.json";
  const std::string script = fmt::format(
      "import json, os, numpy as np\n"
      "from PIL import Image\n"
      "pixels = [np.asarray(Image.open(os.path.join(d, f)).convert('RGB')).reshape(-1, 3)\n"
      "          for d, _, files in os.walk('{}') for f in files]\n"
      "x = np.concatenate(pixels).astype(np.float64) / 255\n"
      "json.dump({{'mean': list(x.mean(0)), 'std': list(x.std(0)), 'pixels': len(x)}},\n"
      "          open('{}', 'w'))\n",
      root, out);
  throw_if_error(write_file_atomically(dir / "pil.py", script));
  EXPECT_EQ(std::system((std::string(STOKER_PYTHON) + " " + dir / "pil.py").c_str()), 0);
  return nlohmann::json::parse(read_file(out).value_or_throw());
}

TEST(ImportCliTest, ImageFolderStatisticsAreThoseOfPilsRgbPixels) {
  testing::TempDir dir;
  const auto jpeg = [](int components, bool progressive) {
    image::testing::JpegSpec spec;
    spec.width = 45 + components;
    spec.height = 31;
    spec.components = components;
    spec.progressive = progressive;
    const std::vector<uint8_t> bytes = image::testing::encode_jpeg(spec);
    return std::string(bytes.begin(), bytes.end());
  };
  const auto png = [](int color_type) {
    image::testing::PngSpec spec;
    spec.color_type = color_type;
    const std::vector<uint8_t> bytes = image::testing::encode_png(spec);
    return std::string(bytes.begin(), bytes.end());
  };
  put(dir / "src/a/rgb.jpg", jpeg(3, false));
  put(dir / "src/a/gray.jpg", jpeg(1, false));
  put(dir / "src/a/cmyk.jpg", jpeg(4, false));
  put(dir / "src/b/progressive.jpg", jpeg(3, true));
  put(dir / "src/b/rgba.png", png(6));
  put(dir / "src/b/palette.png", png(3));
  put(dir / "src/b/gray.png", png(0));
  RunResult convert = run("convert imagefolder " + dir / "src" + " --out " + dir / "out", dir);
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  RunResult inspect = run("inspect --json " + dir / "out", dir);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const nlohmann::json stats = nlohmann::json::parse(inspect.out)["statistics"]["image"];
  const nlohmann::json pil = pil_statistics(dir / "src", dir);
  EXPECT_EQ(stats["pixels"], pil["pixels"]);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(stats["mean"][c].get<double>(), pil["mean"][c].get<double>(), 1e-12) << c;
    EXPECT_NEAR(stats["std"][c].get<double>(), pil["std"][c].get<double>(), 1e-12) << c;
  }
}

// Runs `stoker ARGS` with stderr on a pseudo-terminal (stdout to /dev/null): what it drew there.
std::string run_on_terminal(const std::vector<std::string>& args) {
  int terminal = -1;
  const pid_t pid = ::forkpty(&terminal, nullptr, nullptr, nullptr);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    std::vector<char*> argv = {const_cast<char*>(testing::kStokerCliPath)};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string drawn;
  char buffer[4096];
  for (ssize_t n; (n = ::read(terminal, buffer, sizeof buffer)) > 0;) drawn.append(buffer, n);
  ::close(terminal);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << drawn;
  return drawn;
}

TEST(ImportCliTest, AProgressLineIsDrawnOnATerminal) {
  testing::TempDir dir;
  testing::HangGuard guard(120);
  for (int i = 0; i < 12; ++i) put(dir / fmt::format("src/c{}/{}.jpg", i % 2, i), small_jpeg());
  const std::string drawn =
      run_on_terminal({"convert", "imagefolder", dir / "src", "--out", dir / "out"});
  // The last state drawn, then the line cleared for what follows.
  EXPECT_NE(drawn.find("\r\033[K[########################] 12/12  "), std::string::npos) << drawn;
  EXPECT_EQ(drawn.substr(drawn.size() - 4), "\r\033[K");
}

TEST(ImportCliTest, BadFilesAreEachListedThenTheImportFailsWritingNothing) {
  testing::TempDir dir;
  testing::HangGuard guard(60);
  put(dir / "src/a/good.jpg", small_jpeg());
  put(dir / "src/a/text.jpg", "hello");
  put(dir / "src/b/good.png", small_png());
  put(dir / "src/b/empty.png", "");
  testing::make_fifo(dir / "src/b/fifo.jpg");
  put(dir / "src/b/line\nbreak.jpg", "a name with a line break");
  RunResult r = run("convert imagefolder " + dir / "src" + " --out " + dir / "out", dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines(r.err),
            (std::vector<std::string>{
                dir / "src/a/text.jpg: not a JPEG or PNG image: starts with 68 65 6c 6c 6f",
                dir / "src/b/empty.png: empty file, not an image",
                dir / "src/b/fifo.jpg: not a regular file (a FIFO)",
                dir / "src/b/line\\x0abreak.jpg: not a JPEG or PNG image: starts with 61 20 6e "
                      "61 6d 65 20 77",
                "stoker: 4 bad files of 6 in " + dir / "src" +
                    "; nothing written (--skip-bad imports the rest)"}));
  EXPECT_FALSE(fs::exists(dir / "out"));

  r = run("convert imagefolder --skip-bad --workers 1 " + dir / "src" + " --out " + dir / "out",
          dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 2 images of 2 classes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped 4 bad files, listed with their reasons in " + dir / "out/" +
                       kSkippedListName),
            std::string::npos)
      << r.out;
  EXPECT_EQ(lines(read_file(dir / "out/skipped.txt").value_or_throw()).size(), 4u);
}

// --skip-bad with every file of a split bad would write a dataset of nothing: refused in one
// line, nothing written; with splits, the split that is all bad is named.
TEST(ImportCliTest, SkipBadWithEveryFileBadWritesNothing) {
  testing::TempDir dir;
  put(dir / "src/a/text.jpg", "hello");
  put(dir / "src/b/empty.png", "");
  RunResult r = run("convert imagefolder --skip-bad " + dir / "src" + " --out " + dir / "out", dir);
  EXPECT_EQ(r.exit_code, 1);
  expect_one_line_error(r, dir / "src" + ": all 2 image files are bad, so " + dir / "out" +
                               " would hold no images; nothing written");
  EXPECT_FALSE(fs::exists(dir / "out"));

  put(dir / "splits/train/a/good.jpg", small_jpeg());
  put(dir / "splits/train/b/good.png", small_png());
  put(dir / "splits/val/a/text.jpg", "hello");
  put(dir / "splits/val/b/text.png", "hello");
  r = run("convert imagefolder --skip-bad " + dir / "splits" + " --out " + dir / "out", dir);
  expect_one_line_error(r, dir / "splits/val: all 2 image files are bad, so " + dir / "out/test" +
                               " would hold no images");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(ImportCliTest, ImageFoldersThatCannotBeImportedAreOneLine) {
  testing::TempDir dir;
  const std::string convert = "convert imagefolder ";
  expect_one_line_error(run(convert + dir / "missing --out " + dir / "out", dir),
                        dir / "missing: no such directory");
  put(dir / "file", "x");
  expect_one_line_error(run(convert + dir / "file --out " + dir / "out", dir),
                        dir / "file: not a directory");
  put(dir / "src/full/x.jpg", small_jpeg());
  fs::create_directories(dir / "src/empty");
  expect_one_line_error(run(convert + dir / "src --out " + dir / "out", dir),
                        "for the class empty");
  fs::remove_all(dir / "src/empty");
  fs::create_directories(dir / "src/caf\xe9");
  put(dir / "src/caf\xe9/x.jpg", small_jpeg());
  RunResult r = run(convert + dir / "src --out " + dir / "out", dir);
  expect_one_line_error(r, "class folder name caf\\xe9 is not UTF-8");
  EXPECT_TRUE(is_valid_utf8(r.err));
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(ImportCliTest, MaxSideDownsizesTheLargerImagesAndRefusesBadValuesInOneLine) {
  testing::TempDir dir;
  image::testing::JpegSpec large;
  large.width = 300;
  large.height = 200;
  const std::vector<uint8_t> jpeg = image::testing::encode_jpeg(large);
  put(dir / "src/a/large.jpg", std::string(jpeg.begin(), jpeg.end()));
  put(dir / "src/b/small.png", small_png());  // 40x30
  RunResult r =
      run("convert imagefolder " + dir / "src" + " --out " + dir / "out --max-side 64", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ds = Dataset::open(dir / "out").value_or_throw();
  const ImageRecordFields fields = ImageRecordFields::find(ds->schema()).value_or_throw();
  const auto field = [&](uint64_t record, int f) {
    int64_t value;
    std::memcpy(&value, ds->fixed_field(record, f), sizeof value);
    return value;
  };
  EXPECT_EQ(field(0, fields.width), 64);
  EXPECT_EQ(field(0, fields.height), 43);
  EXPECT_EQ(field(0, fields.original_size), static_cast<int64_t>(jpeg.size()));
  EXPECT_EQ(field(1, fields.width), 40);
  EXPECT_EQ(field(1, fields.height), 30);
  EXPECT_EQ(run("verify " + dir / "out", dir).exit_code, 0);
  fs::remove_all(dir / "out");

  for (const char* bad : {"0", "65501", "-3", "big"}) {
    SCOPED_TRACE(bad);
    r = run("convert imagefolder " + dir / "src" + " --out " + dir / "out --max-side " + bad, dir);
    expect_one_line_error(r, "--max-side");
    EXPECT_FALSE(fs::exists(dir / "out"));
  }
  EXPECT_NE(r.err.find("big"), std::string::npos) << r.err;
}

TEST(ImportCliTest, InspectAbbreviatesManyClasses) {
  testing::TempDir dir;
  for (int c = 0; c < 25; ++c) put(dir / fmt::format("src/c{:02}/x.png", c), small_png());
  ASSERT_EQ(run("convert imagefolder " + dir / "src --out " + dir / "out", dir).exit_code, 0);
  RunResult inspect = run("inspect " + dir / "out", dir);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("classes   25: c00, c01, c02, c03, c04, c05, c06, c07, c08, c09 "
                             "and 15 more (--json lists all)\n"),
            std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("    19         1  c19\n"
                             "  ... 5 more labels: 5 records, 1 to 1 each (--json lists all)\n"),
            std::string::npos)
      << inspect.out;
  auto json = nlohmann::json::parse(run("inspect --json " + dir / "out", dir).out);
  EXPECT_EQ(json["class_names"].size(), 25u);
}

class Cifar10CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string record(kCifar10RecordBytes, '\x7f');
    record[0] = 3;
    for (const char* name : kCifar10TrainFiles) put(src(name), record + record);
    record[0] = 9;
    put(src(kCifar10TestFile), record);
    put(src(kCifar10MetaFile), "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");
  }
  std::string src(const std::string& name) const { return dir_ / ("src/" + name); }
  RunResult convert() {
    return run("convert cifar10 --src " + dir_ / "src --out " + dir_ / "out", dir_);
  }
  testing::TempDir dir_;
};

TEST_F(Cifar10CliTest, ConvertsBothSplitsWithClassNames) {
  RunResult r = convert();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, fmt::format("wrote 10 records to {0}/train and 1 to {0}/test\n", dir_ / "out"));
  RunResult inspect = run("inspect " + dir_ / "out/test", dir_);
  EXPECT_NE(inspect.out.find("schema    image uint8[3,32,32], label int64\n"
                             "classes   10: a, b, c, d, e, f, g, h, i, j\n"),
            std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("     9         1  j\n"), std::string::npos) << inspect.out;
  EXPECT_EQ(run("verify " + dir_ / "out/train", dir_).exit_code, 0);
}

TEST_F(Cifar10CliTest, BadInputIsOneLineNamingTheFileAndNothingIsWritten) {
  std::string record(kCifar10RecordBytes, '\0');
  put(src(kCifar10TrainFiles[1]), record + record.substr(1));
  expect_one_line_error(convert(), src(kCifar10TrainFiles[1]) + ": 6145 bytes is not a whole");
  record[0] = 11;
  put(src(kCifar10TrainFiles[1]), std::string(kCifar10RecordBytes, '\0') + record);
  expect_one_line_error(convert(),
                        src(kCifar10TrainFiles[1]) + ": record 1: label 11 is not one of the 10");
  fs::remove(src(kCifar10TrainFiles[1]));
  expect_one_line_error(convert(), src(kCifar10TrainFiles[1]) + ": no such file");
  fs::remove(src(kCifar10MetaFile));
  expect_one_line_error(convert(), src(kCifar10MetaFile) + ": no such file");
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
}  // namespace stoker
