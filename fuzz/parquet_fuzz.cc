// libFuzzer target for Parquet files read in place (store/import/parquet_source.h): the
// fuzzer's bytes become a .parquet file, which ParquetSource opens and, if it does, reads row
// group by row group through a Dataset, every record's image and label. It traps if an error
// (open's, or a bad record's as record_error names it) is not one line naming the file, or if a
// record of an opened file is missing. Arrow's reader is not instrumented (cmake/
// StokerParquet.cmake): coverage comes from stoker's side, crashes from both. docs/FUZZING.md.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "stoker/store/dataset.h"
#include "stoker/store/image_record.h"
#include "stoker/store/import/parquet_source.h"
#include "stoker/store/record_view.h"
#include "stoker/util/atomic_file.h"

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

void require_line_naming(const stoker::Status& status, const std::string& file) {
  require(!status.is_ok() && status.message().rfind(file + ": ", 0) == 0 &&
          status.message().find('\n') == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp ? tmp : "/tmp") + "/parquet_fuzz_" + std::to_string(::getpid()) +
           ".parquet";
  }();
  if (!write_file_atomically(path, std::string(reinterpret_cast<const char*>(data), size)).is_ok())
    return 0;
  Result<std::shared_ptr<ParquetSource>> source = ParquetSource::open(path, {});
  if (!source.is_ok()) {
    require_line_naming(source.status(), path);
    return 0;
  }
  Result<std::shared_ptr<const Dataset>> opened = Dataset::open(source.value());
  require(opened.is_ok());
  const Dataset& dataset = *opened.value();
  const ImageRecordFields fields = ImageRecordFields::find(dataset.schema()).value();
  std::vector<int64_t> all(dataset.size());
  std::iota(all.begin(), all.end(), 0);
  Result<ShardPins> pins = dataset.pin(all.data(), all.size(), nullptr);  // each unit read once
  require(pins.is_ok());
  for (int64_t i = 0; i < static_cast<int64_t>(dataset.size()); ++i) {
    const ByteSpan record = dataset.record(static_cast<uint64_t>(i));
    const Result<ByteSpan> image = variable_field(dataset.schema(), record, fields.image);
    require(image.is_ok());
    if (image.value().size == 0)
      require_line_naming(dataset.record_error(static_cast<uint64_t>(i), corrupt("bad")), path);
  }
  return 0;
}
