#include "stoker/store/dataset_summary.h"

#include <fmt/format.h>

#include <cstring>
#include <nlohmann/json.hpp>

namespace stoker {

DatasetSummary summarize(const Dataset& dataset) {
  DatasetSummary s;
  s.dir = dataset.dir();
  s.format_version = dataset.manifest().format_version;
  s.records = dataset.size();
  s.shards = dataset.num_shards();
  s.class_names = dataset.manifest().class_names;
  for (int i = 0; i < dataset.num_shards(); ++i) s.bytes += dataset.shard(i).file_bytes();
  const auto& fields = dataset.schema().fields();
  for (size_t f = 0; f < fields.size(); ++f) {
    std::string shape;
    for (size_t d = 0; d < fields[f].shape.size(); ++d)
      shape += (d ? "," : "") + std::to_string(fields[f].shape[d]);
    s.schema_text +=
        fmt::format("{}{} {}{}", f ? ", " : "", fields[f].name, dtype_name(fields[f].dtype),
                    shape.empty() ? "" : "[" + shape + "]");
  }
  int label = dataset.schema().find("label");
  if (label >= 0 && fields[label].dtype == DType::kInt64 && fields[label].shape.empty()) {
    s.has_labels = true;
    for (uint64_t i = 0; i < dataset.size(); ++i) {
      int64_t value;
      std::memcpy(&value, dataset.fixed_field(i, label), sizeof value);
      ++s.label_histogram[value];
    }
  }
  return s;
}

std::string DatasetSummary::to_json(const Schema& schema) const {
  nlohmann::json j = {{"dir", dir},         {"format_version", format_version},
                      {"records", records}, {"shards", shards},
                      {"bytes", bytes},     {"schema", nlohmann::json::parse(schema.to_json())}};
  if (has_labels) {
    nlohmann::json histogram = nlohmann::json::object();
    for (const auto& [value, count] : label_histogram) histogram[std::to_string(value)] = count;
    j["label_histogram"] = histogram;
  }
  if (!class_names.empty()) j["class_names"] = class_names;
  return j.dump();
}

}  // namespace stoker
