#include "stoker/store/dataset_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace stoker {
namespace {

// Index of the int64 scalar field "label", or -1.
int label_field(const Schema& schema) {
  const int f = schema.find("label");
  if (f < 0) return -1;
  const Field& field = schema.fields()[f];
  return field.dtype == DType::kInt64 && field.is_fixed() && field.shape.empty() ? f : -1;
}

int64_t label_of(const Dataset& dataset, uint64_t record, int field) {
  int64_t value;
  std::memcpy(&value, dataset.fixed_field(record, field), sizeof value);
  return value;
}

}  // namespace

DatasetSummary summarize(const Dataset& dataset, bool read_labels) {
  DatasetSummary s;
  s.dir = dataset.dir();
  if (std::string source = dataset.describe(); source != s.dir) s.source = std::move(source);
  s.format_version = dataset.manifest().format_version;
  s.records = dataset.size();
  s.shards = dataset.num_shards();
  s.class_names = dataset.manifest().class_names;
  s.record_shuffle_seed = dataset.manifest().record_shuffle_seed;
  for (int i = 0; i < dataset.num_shards(); ++i)
    s.bytes +=
        dataset.needs_pins() ? dataset.manifest().shards[i].bytes : dataset.shard(i).file_bytes();
  const auto& fields = dataset.schema().fields();
  for (size_t f = 0; f < fields.size(); ++f) {
    // A variable-length field's leading dimension shows as its name: float32[N,4].
    std::string shape = fields[f].length_dim;
    for (size_t d = 0; d < fields[f].shape.size(); ++d)
      shape += (shape.empty() ? "" : ",") + std::to_string(fields[f].shape[d]);
    s.schema_text +=
        fmt::format("{}{} {}{}", f ? ", " : "", fields[f].name, dtype_name(fields[f].dtype),
                    shape.empty() ? "" : "[" + shape + "]");
  }
  s.statistics = dataset.manifest().statistics;
  s.max_lengths = dataset.manifest().max_lengths;
  s.statistics_missing = s.statistics.empty() &&
                         std::any_of(fields.begin(), fields.end(),
                                     [](const Field& f) { return statistics_channels(f) > 0; });
  const int label = label_field(dataset.schema());
  s.has_labels = label >= 0;
  s.labels_read = s.has_labels && read_labels;
  if (!s.labels_read) return s;
  throw_if_error(dataset.for_each_record([&](uint64_t i) {
    const int64_t value = label_of(dataset, i, label);
    s.label_min = i == 0 ? value : std::min(s.label_min, value);
    s.label_max = i == 0 ? value : std::max(s.label_max, value);
    if (!s.label_histogram_complete) return Status::ok();
    ++s.label_histogram[value];
    if (s.label_histogram.size() > static_cast<size_t>(kMaxClasses)) {
      s.label_histogram.clear();
      s.label_histogram_complete = false;
    }
    return Status::ok();
  }));
  return s;
}

Result<int64_t> count_classes(const Dataset& dataset) {
  const int label = label_field(dataset.schema());
  if (label < 0)
    return invalid_argument(dataset.dir() + ": no int64 scalar field 'label' to classify by");
  const size_t names = dataset.manifest().class_names.size();
  if (names > static_cast<size_t>(kMaxClasses))
    return invalid_argument(fmt::format("{}: {} class names, more than the {} classes allowed",
                                        dataset.dir(), names, kMaxClasses));
  if (names > 0) return static_cast<int64_t>(names);
  if (dataset.size() == 0) return invalid_argument(dataset.dir() + " holds no records");
  int64_t largest = 0;
  STOKER_RETURN_IF_ERROR(dataset.for_each_record([&](uint64_t i) {
    const int64_t value = label_of(dataset, i, label);
    if (value < 0 || value >= kMaxClasses)
      return invalid_argument(
          fmt::format("{}: record {} has label {}; labels must be class numbers in [0, {})",
                      dataset.dir(), i, value, kMaxClasses));
    largest = std::max(largest, value);
    return Status::ok();
  }));
  return largest + 1;
}

std::string DatasetSummary::to_json(const Schema& schema) const {
  nlohmann::json j = {{"dir", dir},         {"format_version", format_version},
                      {"records", records}, {"shards", shards},
                      {"bytes", bytes},     {"schema", nlohmann::json::parse(schema.to_json())}};
  if (labels_read && records > 0) {
    j["label_min"] = label_min;
    j["label_max"] = label_max;
  }
  if (labels_read && label_histogram_complete) {
    nlohmann::json histogram = nlohmann::json::object();
    for (const auto& [value, count] : label_histogram) histogram[std::to_string(value)] = count;
    j["label_histogram"] = histogram;
  }
  if (!class_names.empty()) j["class_names"] = class_names;
  if (record_shuffle_seed)
    j["record_order"] = {{"order", "shuffled"}, {"seed", *record_shuffle_seed}};
  for (const auto& [field, stats] : statistics)
    j["statistics"][field] = {{"mean", stats.mean}, {"std", stats.std}, {"pixels", stats.pixels}};
  if (!max_lengths.empty()) j["max_lengths"] = max_lengths;
  if (!source.empty()) j["source"] = source;
  return j.dump();
}

}  // namespace stoker
