// The ImageFolder importer on small trees of JPEGs and PNGs made by the image layer's fixtures.
#include "stoker/store/import/image_folder.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "stoker/image/decode.h"
#include "stoker/image/jpeg_encode.h"
#include "stoker/store/dataset.h"
#include "stoker/store/image_record.h"
#include "stoker/store/record_view.h"
#include "stoker/testing/special_files.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using image::testing::encode_jpeg;
using image::testing::encode_png;
using image::testing::JpegSpec;
using image::testing::PngSpec;

std::string as_string(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

void put(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  throw_if_error(write_file_atomically(path, bytes));
}

std::string jpeg(int width, int height, int components = 3, bool progressive = false) {
  JpegSpec spec;
  spec.width = width;
  spec.height = height;
  spec.components = components;
  spec.progressive = progressive;
  return as_string(encode_jpeg(spec));
}

std::string png(int width, int height, int color_type = 2) {
  PngSpec spec;
  spec.width = width;
  spec.height = height;
  spec.color_type = color_type;
  return as_string(encode_png(spec));
}

// A PNG whose header says 65535 x 65535 (4.3 G pixels), CRC intact.
std::string png_bomb() {
  std::vector<uint8_t> bytes = encode_png(PngSpec{});
  image::testing::put_u32_be(bytes, 16, 65535);
  image::testing::put_u32_be(bytes, 20, 65535);
  image::testing::fix_png_crc(bytes, 8);
  return as_string(bytes);
}

ByteSpan as_span(const std::string& bytes) {
  return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

// The RGB pixels of an encoded image, decoded whole.
std::vector<uint8_t> pixels(const std::string& encoded) {
  image::DecodeBuffer buffer;
  const image::DecodedCrop decoded =
      image::decode_rgb(as_span(encoded), {}, buffer).value_or_throw();
  std::vector<uint8_t> out;
  for (int y = 0; y < decoded.pixels.height; ++y)
    out.insert(out.end(), decoded.pixels.row(y), decoded.pixels.row(y) + 3 * decoded.pixels.width);
  return out;
}

std::string truncated(const std::string& bytes) { return bytes.substr(0, bytes.size() / 2); }

int64_t scalar(const Dataset& ds, uint64_t record, int field) {
  int64_t value;
  std::memcpy(&value, ds.fixed_field(record, field), sizeof value);
  return value;
}

class ImageFolderTest : public ::testing::Test {
 protected:
  std::string src(const std::string& name = "") const { return dir_ / ("src/" + name); }
  std::string out(const std::string& name = "") const { return dir_ / ("out/" + name); }

  // Two classes of JPEGs and PNGs of several kinds, nested folders, a PNG named .jpg.
  void make_good_tree(const std::string& root) {
    put(root + "/cat/a.jpg", jpeg(64, 48));
    put(root + "/cat/b.png", png(40, 30));
    put(root + "/cat/png-named.jpg", png(17, 9, 6));
    put(root + "/cat/sub/c.JPEG", jpeg(33, 21, 1));
    put(root + "/cat/readme.txt", "ignored");
    put(root + "/dog/d.jpg", jpeg(50, 70, 3, /*progressive=*/true));
    put(root + "/dog/e.jpeg", jpeg(8, 8, 4));
    JpegSpec partial;  // progressive, its scans leaving bits unsent: the transcode refuses it
    partial.width = 24;
    partial.height = 16;
    partial.partial_scans = true;
    put(root + "/dog/f.jpg", as_string(encode_jpeg(partial)));
  }

  void SetUp() override {
    options_.src = src();
    options_.out = out();
    options_.workers = 2;
    options_.shard_bytes = 2 << 10;  // several shards
    options_.on_bad = [this](const BadEntry& bad) { bad_.push_back(bad); };
    options_.on_progress = [this](const ImageFolderProgress& p) { progress_.push_back(p); };
  }
  Result<ImageFolderImportSummary> import() { return import_image_folder(options_); }

  // The stored image of record i.
  static std::string stored_image(const Dataset& ds, uint64_t i) {
    const int field = ImageRecordFields::find(ds.schema()).value_or_throw().image;
    const ByteSpan stored = variable_field(ds.schema(), ds.record(i), field).value_or_throw();
    return std::string(reinterpret_cast<const char*>(stored.data), stored.size);
  }

  testing::TempDir dir_;
  ImageFolderImportOptions options_;
  std::vector<BadEntry> bad_;
  std::vector<ImageFolderProgress> progress_;
};

TEST_F(ImageFolderTest, RecordIIsImageFolderSampleIWithItsImageAndFacts) {
  make_good_tree(src());
  ImageFolderImportSummary summary = import().value_or_throw();
  const ImageFolderListing listing = list_image_folder(src()).value_or_throw();
  auto ds = Dataset::open(out()).value_or_throw();
  ASSERT_EQ(ds->size(), listing.samples.size());
  ASSERT_EQ(ds->size(), 7u);
  EXPECT_GT(ds->num_shards(), 1);
  EXPECT_EQ(ds->manifest().class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(summary.images, 7u);
  EXPECT_EQ(summary.classes, 2u);
  EXPECT_EQ(summary.ignored_files, 1u);
  EXPECT_EQ(summary.skipped, 0u);
  EXPECT_EQ(summary.datasets, std::vector<std::string>{out()});
  const ImageRecordFields fields = ImageRecordFields::find(ds->schema()).value_or_throw();
  const int sizes[][2] = {{64, 48}, {40, 30}, {17, 9}, {33, 21}, {50, 70}, {8, 8}, {24, 16}};
  uint64_t bytes_in = 0, bytes_out = 0;
  for (uint64_t i = 0; i < ds->size(); ++i) {
    const std::string original = read_file(listing.samples[i].path).value_or_throw();
    bytes_in += original.size();
    EXPECT_EQ(scalar(*ds, i, fields.label), listing.samples[i].label);
    EXPECT_EQ(scalar(*ds, i, fields.width), sizes[i][0]) << listing.samples[i].path;
    EXPECT_EQ(scalar(*ds, i, fields.height), sizes[i][1]) << listing.samples[i].path;
    EXPECT_EQ(scalar(*ds, i, fields.original_size), static_cast<int64_t>(original.size()));
    EXPECT_EQ(static_cast<uint64_t>(scalar(*ds, i, fields.original_checksum)),
              xxh3_64(original.data(), original.size()));
    // A JPEG is transcoded for crops, an RGB(A) PNG too (a plain 8-bit RGB PNG), with the same
    // pixels.
    const std::string stored = stored_image(*ds, i);
    bytes_out += stored.size();
    const image::ImageHeader header = image::read_image_header(as_span(stored)).value_or_throw();
    if (header.format == image::ImageFormat::kPng) {
      EXPECT_NE(stored, original);
      EXPECT_EQ(header.components, 3);
      EXPECT_FALSE(header.progressive);
      EXPECT_EQ(pixels(stored), pixels(original)) << listing.samples[i].path;
      continue;
    }
    if (i == 6) {  // the JPEG refused
      EXPECT_EQ(stored, original);
      continue;
    }
    EXPECT_NE(stored, original);
    EXPECT_FALSE(header.progressive);
    EXPECT_GT(header.restart_interval, 0);
    EXPECT_EQ(pixels(stored), pixels(original)) << listing.samples[i].path;
  }
  EXPECT_EQ(summary.bytes_in, bytes_in);
  ASSERT_EQ(progress_.size(), 7u);
  for (size_t i = 0; i < progress_.size(); ++i) {
    EXPECT_EQ(progress_[i].done, i + 1);
    EXPECT_EQ(progress_[i].total, 7u);
  }
  EXPECT_EQ(progress_.back().bytes_in, bytes_in);
  EXPECT_EQ(summary.bytes_out, bytes_out);
}

TEST_F(ImageFolderTest, KeepOriginalStoresJpegsAsTheyAre) {
  make_good_tree(src());
  options_.keep_original = true;
  ImageFolderImportSummary summary = import().value_or_throw();
  EXPECT_EQ(summary.bytes_out, summary.bytes_in);
  const ImageFolderListing listing = list_image_folder(src()).value_or_throw();
  auto ds = Dataset::open(out()).value_or_throw();
  for (uint64_t i = 0; i < ds->size(); ++i)
    EXPECT_EQ(stored_image(*ds, i), read_file(listing.samples[i].path).value_or_throw());
}

// PIL's resize of the image file at `path` to width x height (Image.resize with BILINEAR, which
// antialiases), as packed RGB; run by STOKER_PYTHON (its absence fails the test).
std::vector<uint8_t> pil_resized(const std::string& path, int width, int height) {
  const std::string out = path + ".pil.rgb";
  const std::string script = fmt::format(
      "from PIL import Image; open('{}', 'wb').write(Image.open('{}').convert('RGB')"
      ".resize(({}, {}), Image.BILINEAR).tobytes())",
      out, path, width, height);
  EXPECT_EQ(std::system((std::string(STOKER_PYTHON) + " -c \"" + script + "\"").c_str()), 0);
  const std::string bytes = read_file(out).value_or_throw();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

double mean_abs_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::abs(a[i] - b[i]);
  return sum / static_cast<double>(a.size());
}

TEST_F(ImageFolderTest, MaxSideStoresLargerImagesAsJpegsOfThatLongerSide) {
  put(src("cat/a.jpg"), jpeg(300, 200));
  put(src("cat/b.png"), png(150, 400));
  put(src("cat/c.png"), png(60, 80));  // within the limit: stored as before
  put(src("dog/d.jpg"), jpeg(80, 60));
  put(src("dog/e.jpg"), jpeg(100, 40, 1));  // exactly the limit: not resized
  options_.max_side = 100;
  const ImageFolderImportSummary summary = import().value_or_throw();
  const ImageFolderListing listing = list_image_folder(src()).value_or_throw();
  auto ds = Dataset::open(out()).value_or_throw();
  ASSERT_EQ(ds->size(), 5u);
  const ImageRecordFields fields = ImageRecordFields::find(ds->schema()).value_or_throw();
  const int sizes[][2] = {{100, 67}, {38, 100}, {60, 80}, {80, 60}, {100, 40}};
  std::vector<std::string> stored(ds->size());
  uint64_t bytes_out = 0;
  for (uint64_t i = 0; i < ds->size(); ++i) {
    const std::string& path = listing.samples[i].path;
    SCOPED_TRACE(path);
    const std::string original = read_file(path).value_or_throw();
    stored[i] = stored_image(*ds, i);
    bytes_out += stored[i].size();
    const image::ImageHeader header = image::read_image_header(as_span(stored[i])).value_or_throw();
    EXPECT_EQ(header.width, sizes[i][0]);
    EXPECT_EQ(header.height, sizes[i][1]);
    EXPECT_EQ(scalar(*ds, i, fields.width), sizes[i][0]);
    EXPECT_EQ(scalar(*ds, i, fields.height), sizes[i][1]);
    EXPECT_EQ(scalar(*ds, i, fields.original_size), static_cast<int64_t>(original.size()));
    EXPECT_EQ(static_cast<uint64_t>(scalar(*ds, i, fields.original_checksum)),
              xxh3_64(original.data(), original.size()));
    if (i == 2) {  // the small PNG, transcoded: the same pixels
      EXPECT_EQ(header.format, image::ImageFormat::kPng);
      EXPECT_EQ(pixels(stored[i]), pixels(original));
    } else if (i >= 3) {  // the small JPEGs, transcoded: the same pixels
      EXPECT_NE(stored[i], original);
      EXPECT_EQ(pixels(stored[i]), pixels(original));
    } else {  // the large ones: JPEGs ready for crops, with the pixels of PIL's resize
      EXPECT_EQ(header.format, image::ImageFormat::kJpeg);
      EXPECT_FALSE(header.progressive);
      EXPECT_EQ(header.restart_interval, (sizes[i][0] + 15) / 16);
      EXPECT_LT(mean_abs_difference(pixels(stored[i]), pil_resized(path, sizes[i][0], sizes[i][1])),
                2.0);
    }
  }
  EXPECT_EQ(summary.bytes_out, bytes_out);

  // --keep-original keeps the small JPEG as it is; the large images are downsized all the same.
  fs::remove_all(out());
  options_.keep_original = true;
  import().value_or_throw();
  ds = Dataset::open(out()).value_or_throw();
  EXPECT_EQ(stored_image(*ds, 0), stored[0]);
  EXPECT_EQ(stored_image(*ds, 1), stored[1]);
  EXPECT_EQ(stored_image(*ds, 3), read_file(listing.samples[3].path).value_or_throw());
}

TEST_F(ImageFolderTest, MaxSideKeepsAtLeastOnePixelAndIsChecked) {
  put(src("cat/line.png"), png(500, 2));
  options_.max_side = 10;
  import().value_or_throw();
  auto ds = Dataset::open(out()).value_or_throw();
  const image::ImageHeader header =
      image::read_image_header(as_span(stored_image(*ds, 0))).value_or_throw();
  EXPECT_EQ(header.width, 10);
  EXPECT_EQ(header.height, 1);  // 2 * 10 / 500 rounds to 0
  fs::remove_all(out());
  for (int bad : {-1, image::kMaxJpegSide + 1}) {
    options_.max_side = bad;
    const Status status = import().status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), fmt::format("max side {} is not within 0..65500", bad));
    EXPECT_FALSE(fs::exists(out()));
  }
}

TEST_F(ImageFolderTest, TheDatasetIsTheSameByteForByteForAnyNumberOfWorkers) {
  for (int i = 0; i < 40; ++i)
    put(src("c" + std::to_string(i % 3) + "/" + std::to_string(i) + ".jpg"),
        i % 5 == 0 ? png(20 + i, 10 + i) : jpeg(16 + i * 3, 12 + i * 2));
  std::vector<std::string> runs;
  for (int workers : {1, 3}) {
    options_.workers = workers;
    import().value_or_throw();
    std::string files;
    for (const auto& entry : fs::directory_iterator(out()))
      files += entry.path().filename().string() + "\n" +
               read_file(entry.path().string()).value_or_throw();
    runs.push_back(files);
    fs::remove_all(out());
  }
  EXPECT_GT(runs[0].size(), 40u * 300);
  EXPECT_EQ(runs[0], runs[1]);
}

// --record-order shuffled: record i is sample order[i] of ImageFolder's, the same bytes for any
// number of workers, the seed in the manifest; every shard holds both classes.
TEST_F(ImageFolderTest, ShuffledRecordsArePermutedImageFolderSamples) {
  for (int i = 0; i < 40; ++i)
    put(src("c" + std::to_string(i / 20) + "/" + std::to_string(i) + ".jpg"),
        jpeg(16 + i * 3, 12 + i * 2));
  options_.record_order = RecordOrder::kShuffled;
  options_.seed = 11;
  options_.shard_bytes = 16 << 10;  // shards of several images
  const ImageFolderListing listing = list_image_folder(src()).value_or_throw();
  const std::vector<uint64_t> order = image_folder_order(RecordOrder::kShuffled, 11, 0, 40);
  std::vector<std::string> runs;
  for (int workers : {1, 3}) {
    options_.workers = workers;
    import().value_or_throw();
    auto ds = Dataset::open(out()).value_or_throw();
    EXPECT_EQ(ds->manifest().record_shuffle_seed, uint64_t{11});
    const ImageRecordFields fields = ImageRecordFields::find(ds->schema()).value_or_throw();
    ASSERT_EQ(ds->size(), 40u);
    for (uint64_t i = 0; i < ds->size(); ++i) {
      const ImageFolderSample& sample = listing.samples[order[i]];
      const std::string original = read_file(sample.path).value_or_throw();
      EXPECT_EQ(static_cast<uint64_t>(scalar(*ds, i, fields.original_checksum)),
                xxh3_64(original.data(), original.size()));
      EXPECT_EQ(scalar(*ds, i, fields.label), sample.label);
    }
    ASSERT_GT(ds->num_shards(), 2);
    std::vector<std::set<int64_t>> labels(ds->num_shards());
    for (uint64_t i = 0; i < ds->size(); ++i)
      labels[ds->locate(i).shard].insert(scalar(*ds, i, fields.label));
    for (int s = 0; s + 1 < ds->num_shards(); ++s)  // the last may hold one record
      EXPECT_EQ(labels[s].size(), 2u) << "shard " << s;
    std::string files;
    for (const auto& entry : fs::directory_iterator(out()))
      files += entry.path().filename().string() + "\n" +
               read_file(entry.path().string()).value_or_throw();
    runs.push_back(files);
    fs::remove_all(out());
  }
  EXPECT_EQ(runs[0], runs[1]);
}

// Per channel, the mean and population std of `images` (packed RGB), two passes, in [0, 1] units.
std::pair<std::vector<double>, std::vector<double>> direct_statistics(
    const std::vector<std::vector<uint8_t>>& images) {
  std::vector<double> means, stds;
  for (int c = 0; c < 3; ++c) {
    long double sum = 0, n = 0, squares = 0;
    for (const auto& image : images) {
      for (size_t i = c; i < image.size(); i += 3) sum += image[i];
      n += image.size() / 3;
    }
    const long double mean = sum / n;
    for (const auto& image : images) {
      for (size_t i = c; i < image.size(); i += 3) squares += (image[i] - mean) * (image[i] - mean);
    }
    means.push_back(static_cast<double>(mean / 255));
    stds.push_back(static_cast<double>(std::sqrt(squares / n) / 255));
  }
  return {means, stds};
}

// The dataset's statistics equal the direct computation over `images`.
void expect_statistics_of(const Dataset& ds, const std::vector<std::vector<uint8_t>>& images) {
  ASSERT_EQ(ds.manifest().statistics.count("image"), 1u);
  const FieldStatistics& stats = ds.manifest().statistics.at("image");
  const auto [means, stds] = direct_statistics(images);
  uint64_t pixels = 0;
  for (const auto& image : images) pixels += image.size() / 3;
  EXPECT_EQ(stats.pixels, pixels);
  ASSERT_EQ(stats.mean.size(), 3u);
  ASSERT_EQ(stats.std.size(), 3u);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(stats.mean[c], means[c], 1e-13) << "channel " << c;
    EXPECT_NEAR(stats.std[c], stds[c], 1e-13) << "channel " << c;
  }
}

TEST_F(ImageFolderTest, TheManifestHoldsTheStatisticsOfEveryImagesRgbPixels) {
  make_good_tree(src());  // RGB, gray, CMYK and progressive JPEGs; RGB and RGBA PNGs
  import().value_or_throw();
  const ImageFolderListing listing = list_image_folder(src()).value_or_throw();
  std::vector<std::vector<uint8_t>> images;
  for (const ImageFolderSample& sample : listing.samples)
    images.push_back(pixels(read_file(sample.path).value_or_throw()));
  expect_statistics_of(*Dataset::open(out()).value_or_throw(), images);
}

TEST_F(ImageFolderTest, GrayImagesHaveTheSameStatisticsInEveryChannel) {
  put(src("a/gray.jpg"), jpeg(40, 30, 1));
  put(src("b/gray.png"), png(21, 13, 0));
  import().value_or_throw();
  const FieldStatistics stats =
      Dataset::open(out()).value_or_throw()->manifest().statistics.at("image");
  EXPECT_EQ(stats.pixels, 40u * 30 + 21 * 13);
  EXPECT_EQ(stats.mean, std::vector<double>(3, stats.mean[0]));
  EXPECT_EQ(stats.std, std::vector<double>(3, stats.std[0]));
  EXPECT_GT(stats.std[0], 0.01);
}

TEST_F(ImageFolderTest, DownsizedImagesCountWithTheirStoredPixels) {
  put(src("cat/a.jpg"), jpeg(300, 200));
  put(src("cat/b.png"), png(60, 80));
  options_.max_side = 100;
  import().value_or_throw();
  auto ds = Dataset::open(out()).value_or_throw();
  expect_statistics_of(*ds, {pixels(stored_image(*ds, 0)), pixels(stored_image(*ds, 1))});
  EXPECT_EQ(ds->manifest().statistics.at("image").pixels, 100u * 67 + 60 * 80);
}

TEST_F(ImageFolderTest, TrainAndValBecomeTrainAndTestWithTheSameClasses) {
  make_good_tree(src("train"));
  put(src("val/cat/x.jpg"), jpeg(10, 10));
  put(src("val/dog/y.png"), png(12, 12));
  put(src("LICENSE"), "files beside the splits are not classes");
  ImageFolderImportSummary summary = import().value_or_throw();
  EXPECT_EQ(summary.datasets, (std::vector<std::string>{out("train"), out("test")}));
  auto train = Dataset::open(out("train")).value_or_throw();
  auto test = Dataset::open(out("test")).value_or_throw();
  EXPECT_EQ(train->size(), 7u);
  EXPECT_EQ(test->size(), 2u);
  EXPECT_EQ(test->manifest().class_names, train->manifest().class_names);
  EXPECT_EQ(summary.images, 9u);
  // test/ is taken as well as val/.
  fs::remove_all(out());
  fs::rename(src("val"), src("test"));
  EXPECT_EQ(import().value_or_throw().images, 9u);
}

TEST_F(ImageFolderTest, SplitsMustAgreeOnTheClasses) {
  make_good_tree(src("train"));
  put(src("val/cat/x.jpg"), jpeg(10, 10));
  put(src("val/cow/y.jpg"), jpeg(10, 10));
  auto result = import();
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().message(),
            src("train") + " and " + src("val") +
                " have different classes (only in the first: dog; only in the second: cow)");
  EXPECT_FALSE(fs::exists(out()));
  put(src("test/cat/x.jpg"), jpeg(10, 10));
  EXPECT_NE(import().status().message().find("holds train/, val/ and test/"), std::string::npos);
}

TEST_F(ImageFolderTest, EveryBadFileIsListedAndNothingIsWritten) {
  testing::HangGuard guard(60);
  make_good_tree(src());
  put(src("cat/bad-1-text.jpg"), "this is not an image");
  put(src("cat/bad-2-empty.png"), "");
  put(src("cat/bad-3-truncated.jpg"), truncated(jpeg(64, 64)));
  put(src("cat/bad-4-truncated-progressive.jpg"), truncated(jpeg(64, 64, 3, true)));
  put(src("dog/bad-5-truncated.png"), truncated(png(64, 64)));
  put(src("dog/bad-6-bomb.png"), png_bomb());
  testing::make_fifo(src("dog/bad-7-fifo.jpg"));
  fs::create_symlink("missing.jpg", src("dog/bad-8-dangling.jpg"));
  fs::create_symlink("bad-9-self.jpg", src("dog/bad-9-self.jpg"));
  put(src("dog/bad-a-huge.jpg"), jpeg(8, 8));
  fs::resize_file(src("dog/bad-a-huge.jpg"), kMaxImageFileBytes + 1);  // sparse, never read
  fs::create_directory_symlink(".", src("dog/loop"));
  put(src("dog/dir.jpg/fine.jpg"), jpeg(9, 9));  // a directory named like an image is walked
  const char* expected[][2] = {
      {"dog/loop", "a symbolic link loop"},  // the listing's bad entries come first
      {"cat/bad-1-text.jpg", "not a JPEG or PNG image: starts with 74 68 69 73"},
      {"cat/bad-2-empty.png", "empty file, not an image"},
      {"cat/bad-3-truncated.jpg", "JPEG: truncated (premature end of data)"},
      {"cat/bad-4-truncated-progressive.jpg", "JPEG: truncated (premature end of data)"},
      {"dog/bad-5-truncated.png", "PNG: truncated"},
      {"dog/bad-6-bomb.png", "65535"},
      {"dog/bad-7-fifo.jpg", "not a regular file (a FIFO)"},
      {"dog/bad-8-dangling.jpg", "a dangling symbolic link"},
      {"dog/bad-9-self.jpg", "Too many levels of symbolic links"},
      {"dog/bad-a-huge.jpg", "larger than 268435456 bytes"},
  };
  // Transcoding finds a JPEG's faults; so does decoding one kept as it is.
  for (bool keep_original : {false, true}) {
    options_.keep_original = keep_original;
    bad_.clear();
    auto result = import();
    ASSERT_FALSE(result.is_ok());
    EXPECT_EQ(result.status().code(), StatusCode::kCorrupt);
    EXPECT_EQ(result.status().message(),
              "11 bad files of 18 in " + src() + "; nothing written (--skip-bad imports the rest)");
    EXPECT_FALSE(fs::exists(out()));
    ASSERT_EQ(bad_.size(), std::size(expected));
    for (size_t i = 0; i < std::size(expected); ++i) {
      EXPECT_EQ(bad_[i].path, src(expected[i][0]));
      EXPECT_NE(bad_[i].reason.find(expected[i][1]), std::string::npos) << bad_[i].reason;
      EXPECT_EQ(bad_[i].reason.find('\n'), std::string::npos);
    }
  }
}

TEST_F(ImageFolderTest, SkipBadImportsTheRestAndListsWhatItSkipped) {
  make_good_tree(src());
  put(src("cat/bad.jpg"), truncated(jpeg(64, 64)));
  put(src("dog/\xff-bad.jpg"), "not an image, and a name that is not UTF-8");
  put(src("dog/\xfe-good.jpg"), jpeg(12, 12));
  options_.skip_bad = true;
  ImageFolderImportSummary summary = import().value_or_throw();
  EXPECT_EQ(summary.images, 8u);
  EXPECT_EQ(summary.skipped, 2u);
  EXPECT_EQ(summary.skipped_list, out(kSkippedListName));
  auto ds = Dataset::open(out()).value_or_throw();
  EXPECT_EQ(ds->size(), 8u);
  const std::string list = read_file(out(kSkippedListName)).value_or_throw();
  EXPECT_EQ(list, src("cat/bad.jpg") + ": JPEG: truncated (premature end of data)\n" +
                      src("dog/\\xff-bad.jpg") +
                      ": not a JPEG or PNG image: starts with 6e 6f 74 20 61 6e 20 69\n");
  EXPECT_TRUE(is_valid_utf8(list));
}

TEST_F(ImageFolderTest, WithSplitsTheSkippedListIsBesideThem) {
  make_good_tree(src("train"));
  make_good_tree(src("val"));
  put(src("val/cat/bad.png"), "");
  options_.skip_bad = true;
  options_.workers = 1;
  ImageFolderImportSummary summary = import().value_or_throw();
  EXPECT_EQ(summary.skipped, 1u);
  EXPECT_EQ(read_file(out(kSkippedListName)).value_or_throw(),
            src("val/cat/bad.png") + ": empty file, not an image\n");
  EXPECT_EQ(Dataset::open(out("test")).value_or_throw()->size(), 7u);
}

TEST_F(ImageFolderTest, AnExistingOutputIsRefusedAndKept) {
  make_good_tree(src());
  put(out("keep"), "precious");
  EXPECT_EQ(import().status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(read_file(out("keep")).value_or_throw(), "precious");
}

TEST_F(ImageFolderTest, AStopRequestEndsTheImportWithNothingWritten) {
  make_good_tree(src());
  int polls = 0;
  options_.stop_requested = [&polls] { return ++polls == 3; };
  const Status status = import().status();
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  EXPECT_EQ(status.message(), src() + ": import stopped");
  EXPECT_EQ(polls, 3);
  EXPECT_EQ(progress_.size(), 3u);  // stopped after the third file
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(ImageFolderTest, ListingErrorsArePassedOn) {
  EXPECT_EQ(import().status().message(), src() + ": no such directory");
  put(src("empty-class/readme.txt"), "");
  put(src("full/x.jpg"), jpeg(8, 8));
  EXPECT_NE(import().status().message().find("for the class empty-class"), std::string::npos);
  EXPECT_FALSE(fs::exists(out()));
}

}  // namespace
}  // namespace stoker
