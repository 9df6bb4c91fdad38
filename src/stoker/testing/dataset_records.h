#pragma once
// Test helper: every record of a dataset as bytes, whatever its source (local shards, a remote
// dataset, files read in place), each record's unit pinned while it is read; or an image
// dataset's images and labels.

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/store/dataset.h"
#include "stoker/store/image_record.h"
#include "stoker/store/record_view.h"

namespace stoker::testing {

inline std::vector<std::string> all_records(const Dataset& dataset) {
  std::vector<std::string> records;
  for (int64_t i = 0; i < static_cast<int64_t>(dataset.size()); ++i) {
    ShardPins pins = dataset.pin(&i, 1, nullptr).value_or_throw();
    ByteSpan r = dataset.record(static_cast<uint64_t>(i));
    records.emplace_back(reinterpret_cast<const char*>(r.data), r.size);
  }
  return records;
}

// Each record's image bytes (empty for a bad one) and label, of the image dataset of `source`.
inline std::vector<std::pair<std::string, int64_t>> image_rows(
    std::shared_ptr<ShardSource> source) {
  auto dataset = Dataset::open(std::move(source)).value_or_throw();
  const ImageRecordFields fields = ImageRecordFields::find(dataset->schema()).value_or_throw();
  std::vector<std::pair<std::string, int64_t>> rows;
  throw_if_error(dataset->for_each_record([&](uint64_t i) -> Status {
    const ByteSpan record = dataset->record(i);
    const ByteSpan image = variable_field(dataset->schema(), record, fields.image).value_or_throw();
    int64_t label;
    std::memcpy(&label, fixed_field(dataset->schema(), record, fields.label), sizeof label);
    rows.emplace_back(std::string(reinterpret_cast<const char*>(image.data), image.size), label);
    return Status::ok();
  }));
  return rows;
}

}  // namespace stoker::testing
