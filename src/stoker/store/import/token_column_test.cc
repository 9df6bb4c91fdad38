// token_column: a Parquet file's (pyarrow-written) input_ids column decoded into a Megatron-LM
// dataset whose documents are its rows, in the narrowest type (from statistics or widened),
// found again without decoding; bad rows refused naming the row. (The samples' values:
// python/tests/test_token_columns.py.)

#include "stoker/store/import/token_column.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "stoker/store/import/token_source.h"
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

class TokenColumnTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, int count, int top, bool stats = true) {
    const std::string script = tmp_.path() + "/writer.py";
    throw_if_error(write_file_atomically(script, kWriter));
    const std::string command = std::string(STOKER_PYTHON) + " " + script + " " + tmp_.path() +
                                " " + name + " " + std::to_string(count) + " " +
                                std::to_string(top) + (stats ? " 1" : " 0");
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return tmp_.path() + "/" + name + ".parquet";
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

}  // namespace
}  // namespace stoker
