// ParquetSource: Parquet files written by pyarrow (STOKER_PYTHON) in Hugging Face's and Spark's
// layouts read in place, against the bytes and labels written; its units and bad input.
#include "stoker/store/import/parquet_source.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "stoker/store/dataset.h"
#include "stoker/store/image_record.h"
#include "stoker/store/import/data_files.h"
#include "stoker/store/record_view.h"
#include "stoker/testing/dataset_records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// Writes DIR/NAME.parquet from the images DIR/img/I.jpg (I = 0..count-1, label I % 3) with
// pyarrow: "hf" (image struct of bytes and path, label int64, ClassLabel names in the
// metadata), "hf_paths" (hf's, the struct's bytes null and its path DIR/img/I.jpg's: relative to
// DIR for an even I, absolute for an odd one), "spark" (binary column jpg, int32 column cls) or
// "text_label" (label a string); `rows_per_group` rows a row group; `null_image` a row whose
// image is null (-1: none; hf's bytes and path null, hf_paths' struct null).
// Prints the data page offset of row group 1's image column to DIR/NAME.offset.
const char* const kParquetWriter = R"(
import json, sys
import pyarrow as pa, pyarrow.parquet as pq
d, name, layout, count, per_group, null_image = sys.argv[1:7]
count, per_group, null_image = int(count), int(per_group), int(null_image)
images = [None if i == null_image else open(f"{d}/img/{i}.jpg", "rb").read() for i in range(count)]
labels = [i % 3 for i in range(count)]
if layout == "hf_paths":
    structs = [None if b is None else {"bytes": None, "path": f"img/{i}.jpg" if i % 2 == 0 else f"{d}/img/{i}.jpg"}
               for i, b in enumerate(images)]
else:
    structs = [{"bytes": b, "path": None if b is None else f"{i}.jpg"} for i, b in enumerate(images)]
if layout.startswith("hf"):
    table = pa.table({"image": pa.array(structs,
                                        pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                      "label": pa.array(labels, pa.int64()), "other": pa.array(range(count))})
    features = {"image": {"_type": "Image"},
                "label": {"names": ["ant", "bee", "cow"], "_type": "ClassLabel"}}
    table = table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
elif layout == "spark":
    table = pa.table({"jpg": pa.array(images, pa.binary()), "cls": pa.array(labels, pa.int32())})
else:
    table = pa.table({"image": pa.array(images, pa.binary()), "label": [str(l) for l in labels]})
path = f"{d}/{name}.parquet"
pq.write_table(table, path, row_group_size=per_group, compression="snappy")
meta = pq.ParquetFile(path).metadata
column = [meta.schema.column(i).path for i in range(meta.num_columns)].index(
    "image.bytes" if layout.startswith("hf") else "jpg" if layout == "spark" else "image")
open(f"{d}/{name}.offset", "w").write(str(meta.row_group(min(1, meta.num_row_groups - 1)).column(column).data_page_offset))
)";

class ParquetSourceTest : public ::testing::Test {
 protected:
  // count JPEGs of sizes (8 + i) x (6 + i) under dir/img.
  void make_images(int count) {
    fs::create_directories(tmp_.path() + "/img");
    images_.clear();
    for (int i = 0; i < count; ++i) {
      image::testing::JpegSpec spec;
      spec.width = 8 + i;
      spec.height = 6 + i;
      const std::vector<uint8_t> bytes = image::testing::encode_jpeg(spec);
      images_.emplace_back(bytes.begin(), bytes.end());
      throw_if_error(write_file_atomically(tmp_.path() + "/img/" + std::to_string(i) + ".jpg",
                                           images_.back()));
    }
  }
  // pyarrow writes dir/name.parquet (kParquetWriter); its path.
  std::string write(const std::string& name, const std::string& layout, int per_group,
                    int null_image = -1) {
    const std::string script = tmp_.path() + "/writer.py";
    throw_if_error(write_file_atomically(script, kParquetWriter));
    const std::string command = std::string(STOKER_PYTHON) + " " + script + " " + tmp_.path() +
                                " " + name + " " + layout + " " + std::to_string(images_.size()) +
                                " " + std::to_string(per_group) + " " + std::to_string(null_image);
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return tmp_.path() + "/" + name + ".parquet";
  }
  uint64_t offset(const std::string& name) {
    return std::stoull(read_file(tmp_.path() + "/" + name + ".offset").value_or_throw());
  }
  testing::TempDir tmp_;
  std::vector<std::string> images_;
};

TEST_F(ParquetSourceTest, HuggingFaceLayoutGivesTheImagesAndLabelsWritten) {
  make_images(7);
  const std::string path = write("train", "hf", 3);
  auto source = ParquetSource::open(path, {}).value_or_throw();
  const Manifest& manifest = source->manifest();
  EXPECT_EQ(manifest.records, 7u);
  EXPECT_EQ(manifest.class_names, (std::vector<std::string>{"ant", "bee", "cow"}));
  ASSERT_EQ(manifest.shards.size(), 3u);  // row groups of 3, 3 and 1
  EXPECT_EQ(manifest.shards[1].file, path + "#1");
  EXPECT_EQ(manifest.shards[2].records, 1u);
  const auto rows = testing::image_rows(source);
  ASSERT_EQ(rows.size(), 7u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(rows[i].first, images_[i]) << i;
    EXPECT_EQ(rows[i].second, i % 3) << i;
  }
  // The header's size, as a converted dataset's records have it.
  auto dataset = Dataset::open(source).value_or_throw();
  const ImageRecordFields fields = ImageRecordFields::find(dataset->schema()).value_or_throw();
  const int64_t four = 4;
  ShardPins pins = dataset->pin(&four, 1, nullptr).value_or_throw();
  int64_t width;
  std::memcpy(&width, fixed_field(dataset->schema(), dataset->record(4), fields.width),
              sizeof width);
  EXPECT_EQ(width, 12);
  throw_if_error(dataset->verify_record(4));
}

TEST_F(ParquetSourceTest, SparkLayoutFolderAndGlobWithNamedColumns) {
  make_images(5);
  write("part-1", "spark", 2);
  write("part-0", "spark", 4);
  fs::create_directories(tmp_.path() + "/data");
  for (const char* name : {"part-0", "part-1"})
    fs::rename(tmp_.path() + "/" + name + ".parquet", tmp_.path() + "/data/" + name + ".parquet");
  ParquetSourceOptions options;
  options.image_column = "jpg";
  options.label_column = "cls";
  EXPECT_TRUE(is_data_path(tmp_.path() + "/data", ".parquet"));
  EXPECT_FALSE(is_data_path(tmp_.path() + "/img", ".parquet"));
  const std::string listed =
      tmp_.path() + "/data/part-0.parquet\n" + tmp_.path() + "/data/part-1.parquet";
  for (const std::string& path :
       {tmp_.path() + "/data", tmp_.path() + "/data/part-*.parquet", listed}) {
    auto source = ParquetSource::open(path, options).value_or_throw();
    EXPECT_EQ(source->manifest().shards.size(), 5u);  // 2 + 3 row groups, part-0 first
    EXPECT_TRUE(source->manifest().class_names.empty());
    const auto rows = testing::image_rows(source);
    ASSERT_EQ(rows.size(), 10u);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(rows[i].first, images_[i % 5]) << path << " " << i;
    EXPECT_EQ(rows[7].second, 2 % 3);
  }
  // Hugging Face's column names are not there.
  const Status missing = ParquetSource::open(tmp_.path() + "/data", {}).status();
  EXPECT_EQ(missing.message(), tmp_.path() +
                                   "/data/part-0.parquet: no column 'image' (its "
                                   "columns: jpg, cls)");
}

TEST_F(ParquetSourceTest, WrongSchemaAndNonParquetFilesFailOpenNamingTheFile) {
  make_images(2);
  const std::string path = write("text", "text_label", 2);
  const Status typed = ParquetSource::open(path, {}).status();
  EXPECT_EQ(typed.message(), path + ": column 'label' is BYTE_ARRAY, not an integer (the label)");
  const std::string jpeg = tmp_.path() + "/img/0.jpg";
  const Status not_parquet = ParquetSource::open(jpeg, {}).status();
  EXPECT_EQ(not_parquet.code(), StatusCode::kCorrupt);
  EXPECT_EQ(not_parquet.message().rfind(jpeg + ": not a Parquet file", 0), 0u)
      << not_parquet.message();
  EXPECT_EQ(not_parquet.message().find('\n'), std::string::npos);
  EXPECT_EQ(ParquetSource::open(tmp_.path() + "/img", {}).status().message(),
            tmp_.path() + "/img: holds no .parquet file");
  EXPECT_EQ(ParquetSource::open(tmp_.path() + "/none", {}).status().code(), StatusCode::kNotFound);
}

TEST_F(ParquetSourceTest, ARowGroupTooLargeToBuildInMemoryFailsOpen) {
  const std::string path = tmp_.path() + "/big.parquet";
  const std::string command =
      std::string(STOKER_PYTHON) +
      " -c \"import pyarrow as pa, pyarrow.parquet as pq; n = (1 << 20) + 1; "
      "pq.write_table(pa.table({'image': pa.array([b''] * n), 'label': pa.array([0] * n)}), '" +
      path + "', row_group_size=n)\"";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_EQ(ParquetSource::open(path, {}).status().message(),
            path + ": row group 0 has 1048577 rows, not 0 to 1048576");
}

// Record `global`'s error as the loader reports it, after reading its unit.
std::string parquet_record_error(const std::shared_ptr<const Dataset>& dataset, int64_t global) {
  ShardPins pins = dataset->pin(&global, 1, nullptr).value_or_throw();
  return dataset->record_error(global, corrupt("decode failed")).message();
}

TEST_F(ParquetSourceTest, BadRowsAreNamedByFileRowAndRowGroup) {
  make_images(6);
  throw_if_error(write_file_atomically(tmp_.path() + "/img/4.jpg", "text, not a JPEG"));
  const std::string path = write("train", "hf", 3, /*null_image=*/1);
  auto source = ParquetSource::open(path, {}).value_or_throw();
  auto dataset = Dataset::open(source).value_or_throw();
  EXPECT_EQ(parquet_record_error(dataset, 1),
            path + ": row 1 (row group 0): its image is null (dataset record 1)");
  const std::string bad = parquet_record_error(dataset, 4);
  EXPECT_EQ(bad.rfind(path + ": row 4 (row group 1): ", 0), 0u) << bad;
  EXPECT_NE(bad.find("JPEG"), std::string::npos) << bad;
  // A good row keeps the reader's message.
  EXPECT_EQ(parquet_record_error(dataset, 0),
            path + ": row 0 (row group 0): decode failed (dataset record 0)");
  EXPECT_EQ(testing::image_rows(source)[1].first, "");
}

TEST_F(ParquetSourceTest, ImagesByPathAreReadFromTheirFilesRelativeToTheParquetFilesFolder) {
  make_images(5);
  const std::string path = write("paths", "hf_paths", 2, /*null_image=*/4);
  auto source = ParquetSource::open(path, {}).value_or_throw();
  const auto rows = testing::image_rows(source);
  ASSERT_EQ(rows.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(rows[i].first, images_[i]) << i;
  // Missing files (one by a relative path, one by an absolute one) are bad records naming the
  // path; a null struct stays a null image.
  fs::remove(tmp_.path() + "/img/2.jpg");
  fs::remove(tmp_.path() + "/img/3.jpg");
  auto dataset = Dataset::open(ParquetSource::open(path, {}).value_or_throw()).value_or_throw();
  for (int row : {2, 3}) {
    const std::string file = tmp_.path() + "/img/" + std::to_string(row) + ".jpg";
    const std::string shown = row == 2 ? "img/2.jpg" : file;
    const std::string bad = parquet_record_error(dataset, row);
    EXPECT_EQ(bad.rfind(fmt::format("{}: row {} (row group 1): its image's path '{}': {}: ", path,
                                    row, shown, file),
                        0),
              0u)
        << bad;
    EXPECT_EQ(bad.find('\n'), std::string::npos) << bad;
  }
  EXPECT_EQ(parquet_record_error(dataset, 4),
            path + ": row 4 (row group 2): its image is null (dataset record 4)");
}

TEST_F(ParquetSourceTest, ACorruptPageSpoilsItsRowGroupOnly) {
  make_images(6);
  const std::string path = write("train", "hf", 3);
  auto source = ParquetSource::open(path, {}).value_or_throw();
  // Row group 1's image page header overwritten, the file's size and time kept.
  const auto time = fs::last_write_time(path);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(offset("train")));
    file.write("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12);
  }
  fs::last_write_time(path, time);
  auto dataset = Dataset::open(source).value_or_throw();
  const std::string bad = parquet_record_error(dataset, 5);
  EXPECT_EQ(bad.rfind(path + ": row 5 (row group 1): cannot read it: ", 0), 0u) << bad;
  EXPECT_EQ(bad.find('\n'), std::string::npos) << bad;
  EXPECT_EQ(bad.find("changed"), std::string::npos) << bad;
  const auto rows = testing::image_rows(source);
  EXPECT_EQ(rows[2].first, images_[2]);
  EXPECT_EQ(rows[3].first, "");
  EXPECT_EQ(rows[5].first, "");
}

TEST_F(ParquetSourceTest, AFileChangedAfterOpenIsNamed) {
  make_images(4);
  const std::string path = write("train", "hf", 2);
  auto source = ParquetSource::open(path, {}).value_or_throw();
  write("train", "hf", 4);  // rewritten in place: one row group now
  auto dataset = Dataset::open(source).value_or_throw();
  const std::string bad = parquet_record_error(dataset, 3);
  EXPECT_EQ(bad, path +
                     ": row 3 (row group 1): cannot read it: the file changed since it was "
                     "opened (its size, time or ETag) (dataset record 3)");
}

}  // namespace
}  // namespace stoker
