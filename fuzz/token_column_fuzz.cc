// libFuzzer target for a table's token column (store/import/token_column.h): the fuzzer's bytes
// become both an Arrow IPC file (`.arrow`: stream or file format, read in place where
// uncompressed, else decoded) and a Parquet file (`.parquet`: decoded), each opened as
// token_column's column `input_ids` with a cache folder of its own (emptied for every input).
// An error must be one line naming the file. A column that opens must have its spans inside its
// file, in token order and adding up to its tokens, its documents' first tokens in order; then a
// TokenSource over it (seq_len 2 with position_ids, the rows' documents; and packed first-fit
// into rows of 4) has every sample read: each unit pinned, every sample's fields widened from
// its record and from its views (where the unit is views of the file), and summarize() reads
// every token. A read may fail (a bad token id) in one line. Any violation is a
// __builtin_trap(); ASan and UBSan report the rest. Arrow's reader is pyarrow's library, not
// instrumented: coverage comes from stoker's side. docs/FUZZING.md.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "stoker/store/dataset.h"
#include "stoker/store/import/token_column.h"
#include "stoker/store/import/token_source.h"
#include "stoker/store/record_view.h"
#include "stoker/util/atomic_file.h"

namespace {

using namespace stoker;
using fuzz::check;

// An error in one line starting with `name`.
void check_line_naming(const Status& status, const std::string& name) {
  check(!status.is_ok());
  check(status.message().rfind(name, 0) == 0);
  check(status.message().find('\n') == std::string::npos);
}

// The column's layout: spans inside the file of `size` bytes (one file here), in token order,
// adding up to its tokens; documents' first tokens increasing and inside the tokens.
void check_column(const TokenColumn& column, uint64_t size) {
  if (!column.in_place) return;
  const TokenLayout& layout = column.layout;
  const uint64_t item = token_type_size(layout.type);
  uint64_t next = 0;
  for (const TokenSpan& span : layout.spans) {
    check(span.file == 0 && span.count > 0 && span.first == next);
    check(span.offset <= size && span.count <= (size - span.offset) / item);
    next += span.count;
  }
  check(next == layout.tokens);
  for (size_t i = 0; i < column.document_starts.size(); ++i) {
    check(column.document_starts[i] < layout.tokens);
    check(i == 0 || column.document_starts[i] > column.document_starts[i - 1]);
  }
  check(column.document_starts.size() <= column.documents);
}

// Every sample of a TokenSource over `column` with `options`, read.
void read_all(const std::string& path, const TokenColumn& column, TokenSourceOptions options) {
  options.column = column;
  Result<std::shared_ptr<TokenSource>> source =
      TokenSource::open(column.in_place ? path : column.prefix, options);
  if (!source.is_ok()) {
    check_line_naming(source.status(), path);
    return;
  }
  Result<TokenSummary> summary = source.value()->summarize();
  if (!summary.is_ok()) check_line_naming(summary.status(), path);
  Result<std::shared_ptr<const Dataset>> opened = Dataset::open(source.value());
  check(opened.is_ok());
  const Dataset& dataset = *opened.value();
  const Schema& schema = dataset.schema();
  std::vector<int64_t> all(dataset.size());
  std::iota(all.begin(), all.end(), 0);
  Result<ShardPins> pins = dataset.pin(all.data(), all.size(), nullptr);  // each unit read once
  if (!pins.is_ok()) {
    check_line_naming(pins.status(), path);
    return;
  }
  for (uint64_t i = 0; i < dataset.size(); ++i) {
    const ByteSpan record = dataset.record(i);
    const Dataset::Location at = dataset.locate(i);
    const RecordViews* views = dataset.shard(at.shard).views();
    for (int f = 0; f < static_cast<int>(schema.fields().size()); ++f) {
      const Field& field = schema.fields()[static_cast<size_t>(f)];
      if (!field.is_fixed()) {
        check(variable_field(schema, record, f).is_ok());
        continue;
      }
      const size_t bytes = field.fixed_bytes();
      std::vector<uint8_t> stored(bytes);
      std::memcpy(stored.data(), fixed_field(schema, record, f), bytes);
      if (views) {
        std::vector<uint8_t> widened(bytes);
        views->write(at.record, f, static_cast<size_t>(field.num_elements()), widened.data());
        check(widened == stored);
      }
      if (field.name == "input_ids") {
        std::vector<int64_t> ids(bytes / sizeof(int64_t));
        std::memcpy(ids.data(), stored.data(), ids.size() * sizeof(int64_t));
        for (int64_t id : ids) check(id >= 0);
      }
    }
  }
}

void one(const std::string& path, const std::string& cache, const uint8_t* data, size_t size) {
  if (!write_file_atomically(path, std::string(reinterpret_cast<const char*>(data), size)).is_ok())
    return;
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
  Result<TokenColumn> column = token_column(path, "input_ids", cache, /*document_starts=*/true);
  if (!column.is_ok()) {
    check_line_naming(column.status(), path);
    return;
  }
  check_column(column.value(), size);
  TokenSourceOptions options;
  options.seq_len = 2;
  options.position_ids = true;
  read_all(path, column.value(), options);
  options = {};
  options.seq_len = 4;
  options.packing = TokenPacking::kFirstFit;
  read_all(path, column.value(), options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string base = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp ? tmp : "/tmp") + "/token_column_fuzz_" + std::to_string(::getpid());
  }();
  one(base + ".arrow", base + "-cache", data, size);
  one(base + ".parquet", base + "-cache", data, size);
  return 0;
}
