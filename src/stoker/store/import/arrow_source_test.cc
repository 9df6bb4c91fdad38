// ArrowSource: Arrow IPC files written by pyarrow (STOKER_PYTHON) as Hugging Face datasets keeps
// its tables (the stream format) and in Arrow's file format, read in place against the images
// and labels written; its units, bad rows and bad files.
#include "stoker/store/import/arrow_source.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "stoker/testing/dataset_records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// Writes DIR/img/I.jpg (I = 0..count-1, I x (I + 5) pixels; grey for I == grey, else RGB, by
// PIL) and DIR/NAME.arrow of them with pyarrow: "hf" (an image struct of bytes and path, label
// int64 I % 3, ClassLabel names in the metadata, another column; the IPC stream format) or
// "file" (binary column jpg, int32 column cls; the IPC file format); `per_batch` rows a record
// batch; row `null_image`'s image null (-1: none).
const char* const kArrowWriter = R"(
import io, json, sys
import numpy as np, PIL.Image, pyarrow as pa
d, name, layout, count, per_batch, null_image, grey = sys.argv[1:8]
count, per_batch, null_image, grey = int(count), int(per_batch), int(null_image), int(grey)
images = []
for i in range(count):
    pixels = np.random.default_rng(i).integers(0, 255, (i + 5, i + 1, 3), dtype=np.uint8)
    out = io.BytesIO()
    PIL.Image.fromarray(pixels[:, :, 0] if i == grey else pixels).save(out, "JPEG")
    open(f"{d}/img/{i}.jpg", "wb").write(out.getvalue())
    images.append(None if i == null_image else out.getvalue())
labels = [i % 3 for i in range(count)]
if layout == "hf":
    structs = [None if b is None else {"bytes": b, "path": f"{i}.jpg"} for i, b in enumerate(images)]
    table = pa.table({"image": pa.array(structs, pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                      "label": pa.array(labels, pa.int64()), "other": pa.array(range(count))})
    features = {"image": {"_type": "Image"}, "label": {"names": ["ant", "bee", "cow"], "_type": "ClassLabel"}}
    table = table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    new = pa.ipc.new_stream
else:
    table = pa.table({"jpg": pa.array(images, pa.binary()), "cls": pa.array(labels, pa.int32())})
    new = pa.ipc.new_file
with pa.OSFile(f"{d}/{name}.arrow", "wb") as sink, new(sink, table.schema) as writer:
    for batch in table.to_batches(max_chunksize=per_batch):
        writer.write_batch(batch)
)";

class ArrowSourceTest : public ::testing::Test {
 protected:
  // pyarrow writes dir/name.arrow (kArrowWriter) of `count` images; its path.
  std::string write(const std::string& name, const std::string& layout, int count, int per_batch,
                    int null_image = -1, int grey = -1) {
    fs::create_directories(tmp_.path() + "/img");
    const std::string script = tmp_.path() + "/writer.py";
    throw_if_error(write_file_atomically(script, kArrowWriter));
    const std::string command = std::string(STOKER_PYTHON) + " " + script + " " + tmp_.path() +
                                " " + name + " " + layout + " " + std::to_string(count) + " " +
                                std::to_string(per_batch) + " " + std::to_string(null_image) + " " +
                                std::to_string(grey);
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return tmp_.path() + "/" + name + ".arrow";
  }
  std::string image(int i) {
    return read_file(tmp_.path() + "/img/" + std::to_string(i) + ".jpg").value_or_throw();
  }
  testing::TempDir tmp_;
};

TEST_F(ArrowSourceTest, HuggingFaceStreamsAndArrowFilesGiveTheImagesAndLabelsWritten) {
  const std::string path = write("data", "hf", 7, 3);
  auto source = ArrowSource::open(path, {}).value_or_throw();
  const Manifest& manifest = source->manifest();
  EXPECT_EQ(manifest.records, 7u);
  EXPECT_EQ(manifest.class_names, (std::vector<std::string>{"ant", "bee", "cow"}));
  ASSERT_EQ(manifest.shards.size(), 3u);  // record batches of 3, 3 and 1
  EXPECT_EQ(manifest.shards[1].file, path + "#1");
  EXPECT_EQ(manifest.shards[2].records, 1u);
  auto rows = testing::image_rows(source);
  ASSERT_EQ(rows.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(rows[i], std::make_pair(image(i), int64_t{i % 3})) << i;
  // Arrow's file format, Spark's columns, by folder.
  fs::create_directories(tmp_.path() + "/spark");
  fs::rename(write("part", "file", 5, 2), tmp_.path() + "/spark/part.arrow");
  ArrowSourceOptions spark;
  spark.image_column = "jpg";
  spark.label_column = "cls";
  rows = testing::image_rows(ArrowSource::open(tmp_.path() + "/spark", spark).value_or_throw());
  ASSERT_EQ(rows.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(rows[i], std::make_pair(image(i), int64_t{i % 3})) << i;
}

TEST_F(ArrowSourceTest, BadFilesFailOpenInOneLineNamingTheFile) {
  const std::string path = write("data", "hf", 4, 2);
  const std::string bytes = read_file(path).value_or_throw();
  auto refused = [&](const std::string& name, const std::string& content,
                     const ArrowSourceOptions& options = {}) {
    const std::string file = tmp_.path() + "/" + name;
    throw_if_error(write_file_atomically(file, content));
    Result<std::shared_ptr<ArrowSource>> source = ArrowSource::open(file, options);
    EXPECT_FALSE(source.is_ok()) << name;
    return source.status().message();
  };
  EXPECT_EQ(refused("empty.arrow", ""), tmp_.path() +
                                            "/empty.arrow: not an Arrow file stoker reads: "
                                            "no schema (an empty file?)");
  const std::string cut = refused("cut.arrow", bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(cut.rfind(tmp_.path() + "/cut.arrow: not an Arrow file stoker reads: at byte ", 0), 0u)
      << cut;
  EXPECT_EQ(cut.find('\n'), std::string::npos);
  ArrowSourceOptions other;
  other.label_column = "kind";
  EXPECT_EQ(refused("named.arrow", bytes, other),
            tmp_.path() + "/named.arrow: no column 'kind' (its columns: image, label, other)");
  other.label_column = "image";
  EXPECT_NE(refused("typed.arrow", bytes, other).find("column 'image' is struct"),
            std::string::npos);
}

TEST_F(ArrowSourceTest, BadRowsAndAChangedFileAreNamedByFileRowAndBatch) {
  ArrowSourceOptions own;
  own.pil = PilDecode::kOwn;
  const std::string path = write("data", "hf", 5, 2, /*null_image=*/1, /*grey=*/3);
  auto source = ArrowSource::open(path, own).value_or_throw();
  const auto rows = testing::image_rows(source);
  EXPECT_EQ(rows[1].first, "");
  EXPECT_EQ(rows[3].first, "");  // grey: PIL keeps it grey
  EXPECT_EQ(rows[4].first, image(4));
  auto error = [&](uint64_t record) {
    const int unit = static_cast<int>(record / 2);
    return source->record_error(unit, record % 2, record, corrupt("bad")).message();
  };
  EXPECT_EQ(error(1), path + ": row 1 (record batch 0): its image is null (dataset record 1)");
  EXPECT_EQ(error(3).rfind(path + ": row 3 (record batch 1): its image has 1 samples a pixel", 0),
            0u);
  // Without the check, the grey image is read; a file changed since it opened, named.
  auto plain = ArrowSource::open(path, {}).value_or_throw();
  throw_if_error(write_file_atomically(path, read_file(path).value_or_throw() + "changed"));
  const auto changed = testing::image_rows(plain);
  EXPECT_EQ(changed[3].first, "");
  EXPECT_EQ(plain->record_error(1, 1, 3, corrupt("bad")).message(),
            path +
                ": row 3 (record batch 1): the file changed since it was opened (its size or "
                "time) (dataset record 3)");
}

}  // namespace
}  // namespace stoker
