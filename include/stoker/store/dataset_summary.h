#pragma once
// DatasetSummary: what `stoker inspect` reports of a dataset — schema, counts, sizes and, for
// an int64 scalar field named "label", a histogram of its values.

#include <cstdint>
#include <map>
#include <string>

#include "stoker/store/dataset.h"

namespace stoker {

struct DatasetSummary {
  std::string dir;
  uint32_t format_version = 0;
  uint64_t records = 0;
  int shards = 0;
  uint64_t bytes = 0;       // all shard files
  std::string schema_text;  // e.g. "image uint8[1,28,28], label int64"
  bool has_labels = false;
  std::map<int64_t, uint64_t> label_histogram;
  std::vector<std::string> class_names;

  // One JSON object: dir, format_version, records, shards, bytes, schema (the JSON form),
  // label_histogram {"value": count} and class_names when present.
  std::string to_json(const Schema& schema) const;
};

// Reads every label once (mmap, no checksums): fast even for millions of records.
DatasetSummary summarize(const Dataset& dataset);

}  // namespace stoker
