#pragma once
// DatasetSummary: what `stoker inspect` reports of a dataset — schema, counts, sizes, pixel
// statistics and, for an int64 scalar field named "label", a histogram of its values. Labels are
// whatever int64 values the records hold: nothing here is sized by a label's value.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/dataset.h"

namespace stoker {

// The most classes a classifier may have (count_classes()), and the most distinct label values
// a summary counts one by one.
constexpr int64_t kMaxClasses = int64_t{1} << 16;

struct DatasetSummary {
  std::string dir;
  // The source's description (ShardSource::describe) where it says more than `dir`: what a
  // source read in place reads and leaves out (e.g. a WebDataset member only some samples hold).
  std::string source;
  uint32_t format_version = 0;
  uint64_t records = 0;
  int shards = 0;
  uint64_t bytes = 0;       // all shard files
  std::string schema_text;  // e.g. "image uint8[1,28,28], label int64"
  bool has_labels = false;
  // Whether the labels were read (summarize's read_labels): the rest of the label keys hold.
  bool labels_read = false;
  int64_t label_min = 0;  // smallest and largest label, when has_labels and records > 0
  int64_t label_max = 0;
  // Records per label value; left empty, with label_histogram_complete false, when the labels
  // take more than kMaxClasses distinct values.
  std::map<int64_t, uint64_t> label_histogram;
  bool label_histogram_complete = true;
  std::vector<std::string> class_names;
  // The seed when an importer wrote the records in a seeded permutation (manifest
  // record_order); none: the source's order (e.g. class by class).
  std::optional<uint64_t> record_shuffle_seed;
  // The manifest's pixel statistics by field; `statistics_missing` when it has none although a
  // field could have them (a dataset converted by an older stoker).
  std::map<std::string, FieldStatistics> statistics;
  bool statistics_missing = false;
  // The manifest's max_lengths: the most rows of each variable-length field.
  std::map<std::string, uint64_t> max_lengths;

  // One JSON object: dir, source (where there is one), format_version, records, shards, bytes,
  // schema (the JSON form), when the labels were read label_min, label_max and label_histogram
  // {"value": count}, class_names, record_order {"order": "shuffled", "seed": N}, statistics
  // {"field": {"mean": [...], "std": [...], "pixels": n}} and max_lengths {"field": rows} when
  // present.
  std::string to_json(const Schema& schema) const;
};

// Reads every label once (mmap, no checksums, each shard pinned while read): fast even for
// millions of records. Without `read_labels`, only the manifest (a remote dataset's summary
// downloads nothing). Throws Error when a shard cannot be fetched.
DatasetSummary summarize(const Dataset& dataset, bool read_labels = true);

// The classes a classifier of `dataset` needs: the manifest's class names if it has any, else
// the largest label + 1, reading every record's label (an int64 scalar field "label"). Errors
// (kInvalidArgument, naming the dataset): no such field; more than kMaxClasses class names;
// without names, no records or a label outside [0, kMaxClasses) (naming the first such record).
Result<int64_t> count_classes(const Dataset& dataset);

}  // namespace stoker
