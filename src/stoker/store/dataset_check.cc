#include "stoker/store/dataset_check.h"

#include <fmt/format.h>

#include <cstring>

#include "stoker/store/record_view.h"

namespace stoker {
namespace {

// The `label` field if the manifest names classes and the schema has an int64 scalar `label`,
// else -1.
int class_label_field(const Dataset& dataset) {
  if (dataset.manifest().class_names.empty()) return -1;
  const int field = dataset.schema().find("label");
  if (field < 0) return -1;
  const Field& f = dataset.schema().fields()[field];
  return f.dtype == DType::kInt64 && f.shape.empty() ? field : -1;
}

// Record i's layout and, with label_field >= 0, its label; the message names neither.
Status check_layout_and_label(const Dataset& dataset, uint64_t i, int label_field) {
  const ByteSpan record = dataset.record(i);
  STOKER_RETURN_IF_ERROR(check_record_layout(dataset.schema(), record));
  if (label_field < 0) return Status::ok();
  int64_t label;
  std::memcpy(&label, fixed_field(dataset.schema(), record, label_field), sizeof label);
  const size_t classes = dataset.manifest().class_names.size();
  if (label < 0 || static_cast<uint64_t>(label) >= classes)
    return corrupt(fmt::format("label {} is not one of the manifest's {} classes", label, classes));
  return Status::ok();
}

Status check_one(const Dataset& dataset, uint64_t i, int label_field) {
  STOKER_RETURN_IF_ERROR(dataset.verify_record(i));
  Status status = check_layout_and_label(dataset, i, label_field);
  return status.is_ok() ? status : dataset.record_error(i, status);
}

}  // namespace

Status check_record(const Dataset& dataset, uint64_t i) {
  return check_one(dataset, i, class_label_field(dataset));
}

uint64_t check_records(const Dataset& dataset, const std::function<void(const Status&)>& on_error) {
  const int label_field = class_label_field(dataset);  // once, not per record
  uint64_t bad = 0;
  const Status walked = dataset.for_each_record([&](uint64_t i) {
    Status status = check_one(dataset, i, label_field);
    if (!status.is_ok()) {
      on_error(status);
      ++bad;
    }
    return Status::ok();
  });
  throw_if_error(walked);  // a shard that could not be fetched
  return bad;
}

}  // namespace stoker
