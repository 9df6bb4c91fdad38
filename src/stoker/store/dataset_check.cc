#include "stoker/store/dataset_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "stoker/image/image_header.h"
#include "stoker/store/image_record.h"
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
  return f.dtype == DType::kInt64 && f.shape.empty() && f.is_fixed() ? field : -1;
}

}  // namespace

RecordCheck::RecordCheck(const Dataset& dataset)
    : dataset_(dataset), label_field_(class_label_field(dataset)) {
  if (const Result<ImageRecordFields> image = ImageRecordFields::find(dataset.schema());
      image.is_ok())
    image_field_ = image.value().image;
  const std::vector<Field>& fields = dataset.schema().fields();
  for (int f = 0; f < static_cast<int>(fields.size()); ++f) {
    if (fields[f].is_variable_length()) variable_fields_.push_back(f);
  }
  most_rows_.assign(variable_fields_.size(), 0);
}

// Record i's layout, rows and label; the message names neither shard nor record.
Status RecordCheck::check_fields(uint64_t i) {
  const Schema& schema = dataset_.schema();
  const ByteSpan record = dataset_.record(i);
  STOKER_RETURN_IF_ERROR(check_record_layout(schema, record));
  for (size_t k = 0; k < variable_fields_.size(); ++k) {
    const Field& field = schema.fields()[variable_fields_[k]];
    STOKER_ASSIGN_OR_RETURN(VariableRows rows, variable_rows(schema, record, variable_fields_[k]));
    most_rows_[k] = std::max(most_rows_[k], rows.rows);
    const uint64_t most = dataset_.manifest().max_lengths.at(field.name);
    if (rows.rows > most)
      return corrupt(fmt::format("field '{}' has {} rows, more than the manifest's max_lengths {}",
                                 field.name, rows.rows, most));
  }
  if (image_field_ >= 0) {  // (data read in place keeps a bad file's record, its image empty)
    STOKER_ASSIGN_OR_RETURN(ByteSpan image, variable_field(schema, record, image_field_));
    STOKER_RETURN_IF_ERROR(image::read_image_header(image).status());
  }
  if (label_field_ < 0) return Status::ok();
  int64_t label;
  std::memcpy(&label, fixed_field(schema, record, label_field_), sizeof label);
  const size_t classes = dataset_.manifest().class_names.size();
  if (label < 0 || static_cast<uint64_t>(label) >= classes)
    return corrupt(fmt::format("label {} is not one of the manifest's {} classes", label, classes));
  return Status::ok();
}

Status RecordCheck::check(uint64_t i) {
  STOKER_RETURN_IF_ERROR(dataset_.found_bad(i));
  STOKER_RETURN_IF_ERROR(dataset_.verify_record(i));
  Status status = check_fields(i);
  return status.is_ok() ? status : dataset_.record_error(i, status);
}

Status RecordCheck::finish() const {
  for (size_t k = 0; k < variable_fields_.size(); ++k) {
    const std::string& name = dataset_.schema().fields()[variable_fields_[k]].name;
    const uint64_t most = dataset_.manifest().max_lengths.at(name);
    // More rows than the manifest says are errors of the records that have them.
    if (most > most_rows_[k])
      return corrupt(fmt::format("{}/{}: max_lengths of '{}' is {}, but no record has more than {}",
                                 dataset_.dir(), kManifestName, name, most, most_rows_[k]));
  }
  return Status::ok();
}

uint64_t check_records(const Dataset& dataset, const std::function<void(const Status&)>& on_error) {
  RecordCheck check(dataset);
  uint64_t bad = 0;
  const Status walked = dataset.for_each_record([&](uint64_t i) {
    Status status = check.check(i);
    if (!status.is_ok()) {
      on_error(status);
      ++bad;
    }
    return Status::ok();
  });
  throw_if_error(walked);  // a shard that could not be fetched
  if (Status status = check.finish(); !status.is_ok()) {
    on_error(status);
    ++bad;
  }
  return bad;
}

}  // namespace stoker
