// token_column: a Parquet file's (pyarrow-written) input_ids column decoded into a Megatron-LM
// dataset whose documents are its rows, in the narrowest type (from statistics or widened),
// found again without decoding; bad rows refused naming the row. An uncompressed Arrow file's
// read in place: a span a record batch at the ids' bytes in the file, nothing written; a
// compressed one's copied; damaged ones refused in one line. (The samples' values:
// python/tests/test_token_columns.py.)

#include "stoker/store/import/token_column.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stoker/store/import/token_source.h"
#include "stoker/testing/build_paths.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

// DIR/NAME.parquet: rows r = 0..count-1 of the ids [r * 10, r * 10 + r % 5) (so some empty),
// row r's last id `top` where r == count - 1; row groups of 4 rows; statistics as asked.
const char* const kWriter = R"(
import sys
import pyarrow as pa, pyarrow.parquet as pq
d, name, count, top, stats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
rows = [list(range(r * 10, r * 10 + r % 5)) for r in range(count)]
rows[-1].append(top)
pq.write_table(pa.table({"input_ids": pa.array(rows, pa.list_(pa.int32()))}),
               f"{d}/{name}.parquet", row_group_size=4, write_statistics=stats)
)";

// DIR/NAME.arrow: rows r = 0..19 of the ids [r * 10, r * 10 + r % 5), in record batches of 6
// rows; KIND "stream" (IPC stream, list<int32>), "file" (IPC file, large_list<uint16>), "lz4"
// (stream, bodies LZ4-compressed), "two" (stream, the rows [1, 2, 3] and [4, 5, 6] only),
// "names" (stream, columns "te\nxt" and "ids", a list<it\nem: string>).
const char* const kArrowWriter = R"(
import sys
import pyarrow as pa, pyarrow.ipc as ipc
d, name, kind = sys.argv[1:4]
rows = [list(range(r * 10, r * 10 + r % 5)) for r in range(20)]
item = pa.large_list(pa.uint16()) if kind == "file" else pa.list_(pa.int32())
table = pa.table({"text": [str(r) for r in rows], "input_ids": pa.array(rows, item)})
if kind == "two":
    table = pa.table({"input_ids": pa.array([[1, 2, 3], [4, 5, 6]], item)})
if kind == "names":
    texts = pa.list_(pa.field("it\nem", pa.string()))
    table = pa.table({"te\nxt": ["a"], "ids": pa.array([["b"]], texts)})
options = ipc.IpcWriteOptions(compression="lz4" if kind == "lz4" else None)
new = ipc.new_file if kind == "file" else ipc.new_stream
with new(f"{d}/{name}.arrow", table.schema, options=options) as out:
    out.write_table(table, max_chunksize=6)
)";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class TokenColumnTest : public ::testing::Test {
 protected:
  std::string run(const char* writer, const std::string& args) {
    const std::string script = tmp_.path() + "/writer.py";
    throw_if_error(write_file_atomically(script, writer));
    const std::string command =
        std::string(STOKER_PYTHON) + " " + script + " " + tmp_.path() + " " + args;
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return tmp_.path() + "/";
  }
  std::string write(const std::string& name, int count, int top, bool stats = true) {
    return run(kWriter, name + " " + std::to_string(count) + " " + std::to_string(top) +
                            (stats ? " 1" : " 0")) +
           name + ".parquet";
  }
  std::string write_arrow(const std::string& name, const std::string& kind) {
    return run(kArrowWriter, name + " " + kind) + name + ".arrow";
  }
  std::string cache() const { return tmp_.path() + "/cache"; }
  testing::TempDir tmp_;
};

TEST_F(TokenColumnTest, RowsAreDocumentsInTheNarrowestTypeFoundAgainWithoutDecoding) {
  for (bool stats : {true, false}) {
    const std::string small = write("small", 20, 65535, stats);
    const std::string large = write("large", 20, 70000, stats);
    TokenColumn column = token_column(small, "input_ids", cache()).value_or_throw();
    EXPECT_TRUE(column.decoded);
    EXPECT_EQ(column.files, std::vector<std::string>{small});
    EXPECT_EQ(std::filesystem::file_size(column.prefix + ".bin"), 2u * (40 + 1));  // uint16
    EXPECT_FALSE(token_column(small, "input_ids", cache()).value_or_throw().decoded);
    column = token_column(large, "input_ids", cache()).value_or_throw();
    EXPECT_EQ(std::filesystem::file_size(column.prefix + ".bin"), 4u * (40 + 1));  // int32

    TokenSourceOptions options;
    options.seq_len = 4;
    options.position_ids = true;  // the rows' documents
    options.column = column;
    auto source = TokenSource::open(column.prefix, options).value_or_throw();
    EXPECT_EQ(source->location(), large);
    EXPECT_EQ(source->manifest().records, 10u);  // (41 - 1) / 4
    EXPECT_NE(source->describe().find("41 int32 tokens in 20 documents"), std::string::npos)
        << source->describe();
    std::filesystem::remove_all(cache());
  }
}

TEST_F(TokenColumnTest, BadRowsAreOneLineErrorsLeavingNothingInTheCache) {
  const std::string path = write("neg", 9, -5);
  const Status status = token_column(path, "input_ids", cache()).status();
  EXPECT_EQ(status.message(),
            path + ": row 8 (row group 2): token id -5 at 3 is negative, not a token id");
  EXPECT_EQ(token_column(path, "ids", cache()).status().message(),
            path + ": no column 'ids' (its columns: input_ids)");
  EXPECT_TRUE(std::filesystem::is_empty(cache() + "/token-columns"));
}

// A row group claiming more rows than Arrow's reader should make room for is refused (found by
// the fuzzer: fuzz/findings/tokens-parquet-row-group-of-a-trillion-rows.parquet, whose
// footer's claim of 1.5 * 10^12 rows ran out of memory).
TEST_F(TokenColumnTest, ARowGroupOfMoreThanAMillionRowsIsRefused) {
  const std::string path = tmp_.path() + "/big.parquet";
  const std::string command =
      std::string(STOKER_PYTHON) +
      " -c \"import pyarrow as pa, pyarrow.parquet as pq; n = (1 << 20) + 1; "
      "pq.write_table(pa.table({'input_ids': pa.array([[]] * n, pa.list_(pa.int32()))}), '" +
      path + "', row_group_size=n)\"";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_EQ(token_column(path, "input_ids", cache()).status().message(),
            path + ": row group 0 has 1048577 rows, not 0 to 1048576");
}

// Kilobytes of this process's status line `field` ("VmRSS", "VmHWM").
int64_t status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  return -1;
}

// A file of 559 bytes whose one row's dictionary and RLE runs (70 bytes) decode to 2^27 - 16 int64
// ids (1 GiB; python/tests/token_bombs.py) is refused after 2^24 ids, naming the file, the row
// group and the limit, without making room for them (Arrow's reader of the whole row group
// grew by 2.6 GB); one of 2^24 ids, the limit, is read whole (issue 64).
TEST_F(TokenColumnTest, ARowGroupDecodingToFarMoreThanItsBytesMayHoldIsRefused) {
  auto bomb = [&](const std::string& name, int64_t count) {
    const std::string path = tmp_.path() + "/" + name + ".parquet";
    const std::string command = std::string(STOKER_PYTHON) + " " + testing::kSourceDir +
                                "/python/tests/token_bombs.py " + path + " " +
                                std::to_string(count);
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return path;
  };
  const std::string path = bomb("bomb", (int64_t{1} << 27) - 16);
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM from here
  const int64_t before = status_kb("VmRSS");
  const Status status = token_column(path, "input_ids", cache()).status();
  const int64_t peak = status_kb("VmHWM");
  EXPECT_EQ(status.message(),
            path +
                ": row group 0 decodes to more than 16777216 token ids, more than its 70 bytes in "
                "the file may hold (8192 a byte, at least 16777216): a decompression bomb or a "
                "damaged file");
  EXPECT_TRUE(std::filesystem::is_empty(cache() + "/token-columns"));
  ASSERT_GT(before, 0);
  EXPECT_LT(peak - before, 64 << 10) << "KB more at the peak than before";

  const std::string under = bomb("under", int64_t{1} << 24);
  const TokenColumn column = token_column(under, "input_ids", cache()).value_or_throw();
  const std::string bin = read_bytes(column.prefix + ".bin");
  ASSERT_EQ(bin.size(), size_t{2} << 24);  // uint16
  const std::vector<uint16_t> want(size_t{1} << 24, 7);
  EXPECT_EQ(std::memcmp(bin.data(), want.data(), bin.size()), 0);
}

TEST_F(TokenColumnTest, UncompressedArrowIsReadInPlaceASpanARecordBatch) {
  std::vector<int64_t> ids;
  std::vector<uint64_t> starts;
  for (int r = 0; r < 20; ++r) {
    if (r % 5) starts.push_back(ids.size());
    for (int i = 0; i < r % 5; ++i) ids.push_back(r * 10 + i);
  }
  for (const char* kind : {"stream", "file"}) {
    const std::string path = write_arrow(kind, kind);
    const TokenColumn column = token_column(path, "input_ids", cache(), true).value_or_throw();
    EXPECT_TRUE(column.in_place);
    EXPECT_FALSE(column.decoded);
    EXPECT_EQ(column.prefix, "");
    EXPECT_FALSE(std::filesystem::exists(cache()));  // nothing written
    EXPECT_EQ(column.layout.type, kind[0] == 's' ? TokenType::kInt32 : TokenType::kUint16);
    EXPECT_EQ(column.layout.spans.size(), 4u);  // batches of 6 rows: 20 rows
    EXPECT_EQ(column.documents, 20u);
    EXPECT_EQ(column.document_starts, starts);
    // Each span is its batch's ids where they lie in the file.
    const std::string bytes = read_bytes(path);
    std::vector<int64_t> got;
    for (const TokenSpan& span : column.layout.spans) {
      EXPECT_EQ(span.first, got.size());
      EXPECT_EQ(span.file, 0u);
      got.resize(got.size() + span.count);
      widen_tokens(column.layout.type, reinterpret_cast<const uint8_t*>(bytes.data()) + span.offset,
                   span.count, got.data() + span.first);
    }
    EXPECT_EQ(got, ids);

    TokenSourceOptions options;
    options.seq_len = 4;
    options.position_ids = true;  // the rows' documents
    options.column = column;
    auto source = TokenSource::open(path, options).value_or_throw();
    EXPECT_EQ(source->location(), path);
    EXPECT_EQ(source->manifest().records, 9u);  // (40 - 1) / 4
    EXPECT_NE(source->describe().find("Arrow column 'input_ids': 40 "), std::string::npos)
        << source->describe();
    EXPECT_NE(source->describe().find("tokens in 20 documents"), std::string::npos);
  }
  // Compressed bodies are decoded into the copy, as before.
  const std::string lz4 = write_arrow("lz4", "lz4");
  const TokenColumn copied = token_column(lz4, "input_ids", cache()).value_or_throw();
  EXPECT_FALSE(copied.in_place);
  EXPECT_TRUE(copied.decoded);
  EXPECT_EQ(std::filesystem::file_size(copied.prefix + ".bin"), 2u * 40);  // uint16
}

TEST_F(TokenColumnTest, DamagedArrowFilesAreOneLineErrorsNamingTheFile) {
  const std::string path = write_arrow("two", "two");
  const std::string bytes = read_bytes(path);
  const auto refused = [&](const std::string& damaged, const std::string& what) {
    throw_if_error(write_file_atomically(path, damaged));
    const Status status = token_column(path, "input_ids", cache()).status();
    EXPECT_FALSE(status.is_ok()) << what;
    EXPECT_EQ(status.message().rfind(path, 0), 0u) << what << ": " << status.message();
    EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
    return status.message();
  };
  // Cut in its record batch's ids (its last 8 bytes are the end-of-stream marker).
  EXPECT_NE(refused(bytes.substr(0, bytes.size() - 8 - 6), "cut").find("record batch 0"),
            std::string::npos);
  // The record batch's metadata (after its message's 8-byte prefix) overwritten.
  std::string damaged = bytes;
  const size_t batch = damaged.find("\xff\xff\xff\xff", 4);
  ASSERT_NE(batch, std::string::npos);
  std::memset(damaged.data() + batch + 8, 0x7f, 48);
  EXPECT_NE(refused(damaged, "metadata").find("record batch 0"), std::string::npos);
  // The offsets [0, 3, 6] made [0, 3, 60]: past the 6 ids.
  damaged = bytes;
  const int32_t offsets[] = {0, 3, 6};
  const size_t at = damaged.find(std::string(reinterpret_cast<const char*>(offsets), 12));
  ASSERT_NE(at, std::string::npos);
  damaged[at + 8] = 60;
  EXPECT_NE(refused(damaged, "offsets").find("record batch 0"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(cache() + "/token-columns"));
}

// A file's column names in an error are printable, on one line (found by the fuzzer:
// fuzz/findings/tokens-column-name-with-a-line-break.arrow).
TEST_F(TokenColumnTest, ColumnNamesInErrorsAreOneLine) {
  const std::string path = write_arrow("names", "names");
  EXPECT_EQ(token_column(path, "input_ids", cache()).status().message(),
            path + ": no column 'input_ids' (its columns: te\\x0axt, ids)");
  EXPECT_EQ(token_column(path, "ids", cache()).status().message(),
            path +
                ": column 'ids' is list<it\\x0aem: string>, not a list of integer token ids "
                "(list<int32> or list<int64>)");
}

}  // namespace
}  // namespace stoker
