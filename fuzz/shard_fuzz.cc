// libFuzzer target for the shard reader (docs/FUZZING.md). The fuzzer's bytes become a shard
// file, with its header and index checksums made consistent where its numbers let them be
// located (so inputs get past the checksums to the bounds checks behind them). The target opens
// it, reads and verifies every record (checksum and layout), reads every fixed field and decodes
// every bytes and variable-length field. It traps if open() accepts a shard whose records do not
// lie inside its records region, if a decoded field does not lie inside its record, or if an error
// is not one line.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "stoker/store/record_view.h"
#include "stoker/store/shard_format.h"
#include "stoker/store/shard_reader.h"
#include "stoker/testing/shard_bytes.h"
#include "stoker/util/checksum.h"

namespace stoker {
namespace {

using namespace shard_format;

void require(bool condition) {
  if (!condition) __builtin_trap();
}

// `s` is ok, or kCorrupt (or kUnsupported, if allowed) with a one-line message.
void require_clean(const Status& s, bool unsupported_allowed = false) {
  require(s.is_ok() || ((s.code() == StatusCode::kCorrupt ||
                         (unsupported_allowed && s.code() == StatusCode::kUnsupported)) &&
                        s.message().find('\n') == std::string::npos));
}

// Reads every byte of `span` (so that a span outside the mapping faults under the fuzzer).
uint64_t touch(ByteSpan span) { return xxh3_64(span.data, span.size); }

void check_span_inside(ByteSpan inner, ByteSpan outer) {
  require(inner.data >= outer.data && inner.size <= outer.size &&
          static_cast<size_t>(inner.data - outer.data) <= outer.size - inner.size);
}

void read_everything(const ShardReader& reader, const std::string& bytes) {
  const Schema& schema = reader.schema();
  const auto prefix = testing::load<HeaderPrefix>(bytes, 0);
  const auto footer = testing::load<Footer>(bytes, testing::footer_at(bytes));
  require(reader.records() == footer.record_count);
  const uint64_t data_begin = data_start(prefix.schema_len);
  uint64_t sum = 0;
  for (uint64_t i = 0; i < reader.records(); ++i) {
    // The oracle: the index entry, read from the bytes, lies inside the records region.
    const auto e = testing::load<IndexEntry>(bytes, footer.index_offset + i * kIndexEntryBytes);
    require(e.offset >= data_begin && e.offset <= footer.index_offset &&
            e.length <= footer.index_offset - e.offset && e.length >= schema.min_record_bytes());
    const ByteSpan record = reader.record(i);
    require(record.size == e.length);
    sum += touch(record);
    require_clean(reader.verify_record(i));
    require_clean(check_record_layout(schema, record));
    for (int f = 0; f < static_cast<int>(schema.fields().size()); ++f) {
      const Field& field = schema.fields()[f];
      if (field.is_fixed()) {
        const ByteSpan value{reader.fixed_field(i, f), field.fixed_bytes()};
        check_span_inside(value, record);
        sum += touch(value);
        continue;
      }
      Result<ByteSpan> value = reader.variable_field(i, f);
      require_clean(value.status());
      if (!value.is_ok()) continue;
      check_span_inside(value.value(), record);
      sum += touch(value.value());
      if (!field.is_variable_length()) continue;
      // Its rows are the payload, whole (or kCorrupt).
      Result<VariableRows> rows = variable_rows(schema, record, f);
      require_clean(rows.status());
      if (rows.is_ok())
        require(rows.value().bytes.data == value.value().data &&
                rows.value().rows * field.row_bytes() == value.value().size);
    }
  }
  static volatile uint64_t sink;
  sink = sum;
}

// The file each input is written to, removed when the fuzzer exits.
struct TempShard {
  TempShard() {
    const char* dir = std::getenv("TMPDIR");
    path =
        std::string(dir ? dir : "/tmp") + "/stoker-shard-fuzz-" + std::to_string(getpid()) + ".stk";
  }
  ~TempShard() { unlink(path.c_str()); }
  std::string path;
};

const std::string& shard_path() {
  static const TempShard shard;
  return shard.path;
}

}  // namespace
}  // namespace stoker

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  testing::fix_checksums(&bytes);
  std::ofstream(shard_path(), std::ios::binary | std::ios::trunc) << bytes;
  Result<ShardReader> reader = ShardReader::open(shard_path());
  if (reader.is_ok()) {
    read_everything(reader.value(), bytes);
  } else {
    require_clean(reader.status(), /*unsupported_allowed=*/true);
    require(reader.status().message().rfind(shard_path() + ": ", 0) == 0);
  }
  return 0;
}
