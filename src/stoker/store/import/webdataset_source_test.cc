// WebDatasetSource: tars written by Python's tarfile read in place, records in the image
// layout; bad samples and a changed tar named by tar and member.
#include "stoker/store/import/webdataset_source.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "stoker/store/dataset.h"
#include "stoker/store/image_record.h"
#include "stoker/store/record_view.h"
#include "stoker/testing/tar_fixtures.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

std::string wds_test_jpeg(int width, int height) {
  image::testing::JpegSpec spec;
  spec.width = width;
  spec.height = height;
  const std::vector<uint8_t> bytes = image::testing::encode_jpeg(spec);
  return std::string(bytes.begin(), bytes.end());
}

int64_t wds_test_scalar(const Dataset& dataset, uint64_t i, int field) {
  int64_t v;
  std::memcpy(&v, fixed_field(dataset.schema(), dataset.record(i), field), sizeof v);
  return v;
}

TEST(WebDatasetSource, RecordsAreTheTarsSamplesInTheImageLayout) {
  testing::TempDir tmp;
  fs::create_directories(tmp / "tars");
  const std::string a = wds_test_jpeg(20, 10), b = wds_test_jpeg(8, 24), c = wds_test_jpeg(5, 6);
  tar_fixtures::write_tar(
      tmp / "tars/d-01.tar",
      {{"x/0.jpg", a}, {"x/0.cls", " 3\n"}, {"x/1.cls", "-2"}, {"x/1.jpeg", b}});
  tar_fixtures::write_tar(
      tmp / "tars/d-02.tar",
      {{"y/2.png", "not read"}, {"y/2.jpg", c}, {"y/2.cls", "+7"}, {"y/2.txt", "a caption"}});
  for (const std::string spec : {tmp / "tars", tmp / "tars/d-{01..02}.tar",
                                 tmp / "tars/d-01.tar\n" + tmp / "tars/d-02.tar"}) {
    auto source = WebDatasetSource::open(spec, {}).value_or_throw();
    ASSERT_EQ(source->manifest().shards.size(), 2u) << spec;
    EXPECT_EQ(source->manifest().shards[1].file, tmp / "tars/d-02.tar");
    EXPECT_EQ(source->manifest().shards[0].records, 2u);
    auto dataset = Dataset::open(source).value_or_throw();
    const ImageRecordFields fields = ImageRecordFields::find(dataset->schema()).value_or_throw();
    const std::string images[] = {a, b, c};
    const int64_t labels[] = {3, -2, 7}, widths[] = {20, 8, 5}, heights[] = {10, 24, 6};
    int visited = 0;
    throw_if_error(dataset->for_each_record([&](uint64_t i) -> Status {
      const ByteSpan image =
          variable_field(dataset->schema(), dataset->record(i), fields.image).value_or_throw();
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(image.data), image.size), images[i]);
      EXPECT_EQ(wds_test_scalar(*dataset, i, fields.label), labels[i]);
      EXPECT_EQ(wds_test_scalar(*dataset, i, fields.width), widths[i]);
      EXPECT_EQ(wds_test_scalar(*dataset, i, fields.height), heights[i]);
      EXPECT_EQ(static_cast<uint64_t>(wds_test_scalar(*dataset, i, fields.original_checksum)),
                xxh3_64(images[i].data(), images[i].size()));
      ++visited;
      return Status::ok();
    }));
    EXPECT_EQ(visited, 3);
  }
}

// The message record_error gives record `i` of the one-tar dataset `tar`.
std::string wds_test_error(const std::string& tar, int64_t i) {
  auto dataset = Dataset::open(WebDatasetSource::open(tar, {}).value_or_throw()).value_or_throw();
  ShardPins pins = dataset->pin(&i, 1, nullptr).value_or_throw();
  return dataset->record_error(static_cast<uint64_t>(i), corrupt("the transform's")).message();
}

TEST(WebDatasetSource, BadSamplesAreNamedByTarAndMember) {
  testing::TempDir tmp;
  const std::string tar = tmp / "t.tar";
  const std::string jpeg = wds_test_jpeg(4, 4);
  tar_fixtures::write_tar(tar, {{"a.jpg", jpeg},
                                {"a.cls", "1"},   // good
                                {"b.jpg", jpeg},  // no label
                                {"c.cls", "2"},   // no image
                                {"d.jpg", jpeg},
                                {"d.cls", "two"},  // a bad label
                                {"e.jpg", "not a jpeg"},
                                {"e.cls", "0"},     // a bad image
                                {"nokey", "x"},     // no key
                                {"a.png", jpeg}});  // a duplicate key
  EXPECT_EQ(wds_test_error(tar, 0), tar + ": member a.jpg: the transform's (dataset record 0)");
  EXPECT_EQ(wds_test_error(tar, 1), tar + ": sample b: no label (cls) (dataset record 1)");
  EXPECT_EQ(wds_test_error(tar, 2),
            tar + ": sample c: no image (jpg, jpeg, png or webp) (dataset record 2)");
  EXPECT_EQ(wds_test_error(tar, 3),
            tar + ": member d.cls: not an integer label (dataset record 3)");
  EXPECT_NE(wds_test_error(tar, 4).find(tar + ": member e.jpg: "), std::string::npos);
  EXPECT_EQ(wds_test_error(tar, 5), tar + ": member nokey: its name has no key (dataset record 5)");
  EXPECT_EQ(wds_test_error(tar, 6),
            tar + ": member a.png: key a again (a duplicate key) (dataset record 6)");

  // A truncated tar: its samples before the cut stand, the cut is a record of its own.
  const std::string whole = tar_fixtures::file_bytes(tar);
  ASSERT_TRUE(write_file_atomically(tar, whole.substr(0, 512 + jpeg.size() / 2)).is_ok());
  auto cut = WebDatasetSource::open(tar, {}).value_or_throw();
  EXPECT_EQ(cut->manifest().records, 1u);
  EXPECT_EQ(wds_test_error(tar, 0), tar + ": member a.jpg: cut short: its " +
                                        std::to_string(jpeg.size()) +
                                        " bytes run past the tar's end (dataset record 0)");
  // Not a tar at all: one bad record; a tar that is not there: the open's error.
  ASSERT_TRUE(write_file_atomically(tar, std::string(1000, 'z')).is_ok());
  EXPECT_EQ(wds_test_error(tar, 0),
            tar + ": not a tar: no tar header at its start (dataset record 0)");
  EXPECT_EQ(WebDatasetSource::open(tmp / "gone.tar", {}).status().message(),
            tmp / "gone.tar" + ": no such tar");
}

TEST(WebDatasetSource, ATarChangedAfterItsIndexIsCaught) {
  testing::TempDir tmp;
  const std::string tar = tmp / "t.tar";
  const std::string jpeg = wds_test_jpeg(4, 4);
  tar_fixtures::write_tar(tar, {{"a.jpg", jpeg}, {"a.cls", "1"}, {"b.jpg", jpeg}, {"b.cls", "0"}});
  WebDatasetSourceOptions options;
  options.index_cache_dir = tmp / "cache";
  auto dataset =
      Dataset::open(WebDatasetSource::open(tar, options).value_or_throw()).value_or_throw();
  // Rewritten (another size) after the open: every sample is bad.
  tar_fixtures::write_tar(tar, {{"a.jpg", jpeg + "x"}, {"a.cls", "1"}});
  const int64_t first = 0;
  ShardPins pins = dataset->pin(&first, 1, nullptr).value_or_throw();
  EXPECT_EQ(dataset->record_error(1, corrupt("x")).message(),
            tar + ": changed after its index was built (dataset record 1)");
}

}  // namespace
}  // namespace stoker
