#pragma once
// Test helper: every record of a dataset as bytes, whatever its source (local shards, a remote
// dataset, files read in place), each record's unit pinned while it is read.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/store/dataset.h"

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

}  // namespace stoker::testing
