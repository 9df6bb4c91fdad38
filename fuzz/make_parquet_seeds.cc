// Writes the Parquet fuzz target's seed corpus into a directory with Arrow's writer: small files
// in Hugging Face's layout (an image struct of bytes and path, an int64 label; a null image; row
// groups of two rows), uncompressed and Snappy-compressed, the images small JPEGs from the
// tests' encoder.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/writer.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "stoker/testing/test_images.h"

namespace {

std::shared_ptr<arrow::Table> hugging_face_table(int rows) {
  arrow::BinaryBuilder bytes;
  arrow::StringBuilder paths;
  arrow::Int64Builder labels;
  for (int i = 0; i < rows; ++i) {
    stoker::image::testing::JpegSpec spec;
    spec.width = 8 + i;
    spec.height = 8;
    const std::vector<uint8_t> jpeg = stoker::image::testing::encode_jpeg(spec);
    if (i == 1) {
      (void)bytes.AppendNull();
    } else {
      (void)bytes.Append(jpeg.data(), static_cast<int32_t>(jpeg.size()));
    }
    (void)paths.Append(std::to_string(i) + ".jpg");
    (void)labels.Append(i % 2);
  }
  std::shared_ptr<arrow::Array> b = bytes.Finish().ValueOrDie();
  std::shared_ptr<arrow::Array> p = paths.Finish().ValueOrDie();
  std::shared_ptr<arrow::Array> l = labels.Finish().ValueOrDie();
  std::shared_ptr<arrow::Array> image =
      arrow::StructArray::Make({b, p}, std::vector<std::string>{"bytes", "path"}).ValueOrDie();
  auto schema =
      arrow::schema({arrow::field("image", image->type()), arrow::field("label", arrow::int64())});
  return arrow::Table::Make(schema, {image, l});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: parquet_fuzz_seeds DIR\n";
    return 2;
  }
  int k = 0;
  for (parquet::Compression::type codec :
       {parquet::Compression::UNCOMPRESSED, parquet::Compression::SNAPPY}) {
    auto out = arrow::io::FileOutputStream::Open(std::string(argv[1]) + "/" + std::to_string(k++))
                   .ValueOrDie();
    auto properties = parquet::WriterProperties::Builder().compression(codec)->build();
    const arrow::Status written = parquet::arrow::WriteTable(
        *hugging_face_table(5), arrow::default_memory_pool(), out, /*chunk_size=*/2, properties);
    if (!written.ok() || !out->Close().ok()) {
      std::cerr << written.ToString() << "\n";
      return 1;
    }
  }
  return 0;
}
