// Writes the token column fuzz target's seed corpus into a directory with Arrow's writers:
// tokenized tables (a `text` column and an `input_ids` column of token id lists, some rows
// empty) as an Arrow IPC stream (list<int32>, list<uint16>, a null row, a null id), an Arrow
// IPC file (large_list<int64>, ZSTD bodies), LZ4-compressed stream bodies, and Parquet
// (list<int32> uncompressed, large_list<int64> Snappy), in record batches or row groups of 3
// rows; and a Parquet row of one id repeated 1,000 times (dictionary runs), uncompressed and
// ZSTD.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/ipc/api.h>
#include <parquet/arrow/writer.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {

// A table of `rows` documents: row r's ids [r * 7, r * 7 + r % 4) as `item` lists (`large`:
// large_list), with a null row at `null_row` and a null id in row `null_id` where >= 0.
std::shared_ptr<arrow::Table> token_table(const std::shared_ptr<arrow::DataType>& item, bool large,
                                          int rows, int null_row = -1, int null_id = -1) {
  std::unique_ptr<arrow::ArrayBuilder> builder;
  const auto type = large ? arrow::large_list(item) : arrow::list(item);
  if (!arrow::MakeBuilder(arrow::default_memory_pool(), type, &builder).ok()) std::abort();
  arrow::StringBuilder text;
  for (int r = 0; r < rows; ++r) {
    (void)text.Append("document " + std::to_string(r));
    if (r == null_row) {
      (void)builder->AppendNull();
      continue;
    }
    auto* list = large ? nullptr : static_cast<arrow::ListBuilder*>(builder.get());
    auto* large_list = large ? static_cast<arrow::LargeListBuilder*>(builder.get()) : nullptr;
    (void)(large ? large_list->Append() : list->Append());
    arrow::ArrayBuilder* values = large ? large_list->value_builder() : list->value_builder();
    for (int i = 0; i < r % 4; ++i) {
      if (r == null_id && i == 1) {
        (void)values->AppendNull();
        continue;
      }
      const auto scalar = arrow::MakeScalar(item, r * 7 + i).ValueOrDie();
      (void)values->AppendScalar(*scalar);
    }
  }
  std::shared_ptr<arrow::Array> ids = builder->Finish().ValueOrDie();
  std::shared_ptr<arrow::Array> texts = text.Finish().ValueOrDie();
  auto schema =
      arrow::schema({arrow::field("text", arrow::utf8()), arrow::field("input_ids", type)});
  return arrow::Table::Make(schema, {texts, ids});
}

// A table of one document: `count` ids, each 7, int64 (as Parquet, dictionary-encoded: its
// levels and indices runs, whose lengths the fuzzer may make a decompression bomb's).
std::shared_ptr<arrow::Table> run_table(int count) {
  arrow::Int64Builder ids;
  for (int i = 0; i < count; ++i) (void)ids.Append(7);
  auto values = ids.Finish().ValueOrDie();
  auto offsets = arrow::Int32Array(2, arrow::Buffer::FromVector(std::vector<int32_t>{0, count}));
  auto lists = arrow::ListArray::FromArrays(offsets, *values).ValueOrDie();
  return arrow::Table::Make(arrow::schema({arrow::field("input_ids", lists->type())}), {lists});
}

arrow::Status write_arrow(const std::string& path, const arrow::Table& table, bool file_format,
                          arrow::Compression::type codec) {
  ARROW_ASSIGN_OR_RAISE(auto out, arrow::io::FileOutputStream::Open(path));
  arrow::ipc::IpcWriteOptions options = arrow::ipc::IpcWriteOptions::Defaults();
  if (codec != arrow::Compression::UNCOMPRESSED) {
    ARROW_ASSIGN_OR_RAISE(options.codec, arrow::util::Codec::Create(codec));
  }
  std::shared_ptr<arrow::ipc::RecordBatchWriter> writer;
  if (file_format) {
    ARROW_ASSIGN_OR_RAISE(writer, arrow::ipc::MakeFileWriter(out, table.schema(), options));
  } else {
    ARROW_ASSIGN_OR_RAISE(writer, arrow::ipc::MakeStreamWriter(out, table.schema(), options));
  }
  ARROW_RETURN_NOT_OK(writer->WriteTable(table, /*max_chunksize=*/3));
  ARROW_RETURN_NOT_OK(writer->Close());
  return out->Close();
}

arrow::Status write_parquet(const std::string& path, const arrow::Table& table,
                            parquet::Compression::type codec) {
  ARROW_ASSIGN_OR_RAISE(auto out, arrow::io::FileOutputStream::Open(path));
  auto properties = parquet::WriterProperties::Builder().compression(codec)->build();
  ARROW_RETURN_NOT_OK(parquet::arrow::WriteTable(table, arrow::default_memory_pool(), out,
                                                 /*chunk_size=*/3, properties));
  return out->Close();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: token_column_fuzz_seeds DIR\n";
    return 2;
  }
  const std::string dir = std::string(argv[1]) + "/";
  using arrow::Compression;
  const arrow::Status statuses[] = {
      write_arrow(dir + "stream-int32", *token_table(arrow::int32(), false, 10), false,
                  Compression::UNCOMPRESSED),
      write_arrow(dir + "file-large-int64", *token_table(arrow::int64(), true, 10), true,
                  Compression::UNCOMPRESSED),
      write_arrow(dir + "stream-lz4", *token_table(arrow::int32(), false, 10), false,
                  Compression::LZ4_FRAME),
      write_arrow(dir + "file-zstd", *token_table(arrow::int32(), false, 7), true,
                  Compression::ZSTD),
      write_arrow(dir + "stream-uint16", *token_table(arrow::uint16(), false, 8), false,
                  Compression::UNCOMPRESSED),
      write_arrow(dir + "stream-null-row", *token_table(arrow::int32(), false, 6, 2), false,
                  Compression::UNCOMPRESSED),
      write_arrow(dir + "stream-null-id", *token_table(arrow::int64(), false, 6, -1, 3), false,
                  Compression::UNCOMPRESSED),
      write_parquet(dir + "parquet-int32", *token_table(arrow::int32(), false, 10),
                    parquet::Compression::UNCOMPRESSED),
      write_parquet(dir + "parquet-large-int64", *token_table(arrow::int64(), true, 10),
                    parquet::Compression::SNAPPY),
      write_parquet(dir + "parquet-run", *run_table(1000), parquet::Compression::UNCOMPRESSED),
      write_parquet(dir + "parquet-run-zstd", *run_table(1000), parquet::Compression::ZSTD),
  };
  for (const arrow::Status& status : statuses) {
    if (!status.ok()) {
      std::cerr << status.ToString() << "\n";
      return 1;
    }
  }
  return 0;
}
