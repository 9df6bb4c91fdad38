#include "stoker/pipeline/transform.h"

#include <fmt/format.h>

#include <cstring>

#include "stoker/pipeline/normalization.h"
#include "stoker/store/record_view.h"

namespace stoker {
namespace {

class CopyField : public Transform {
 public:
  CopyField(const Schema& schema, int field)
      : field_(schema.fields()[field]),
        offset_(schema.fixed_offset(field)),
        bytes_(field_.fixed_bytes()),
        index_(field) {}
  DType dtype() const override { return field_.dtype; }
  std::vector<int64_t> sample_shape() const override { return field_.shape; }
  size_t record_prefix() const override { return offset_ + bytes_; }
  bool copies_views() const override { return true; }
  Status apply(const SampleInput& input, uint8_t* slot) const override {
    if (input.viewed.views) {  // widened from the mapped file straight into the slot
      input.viewed.views->write(input.viewed.record, index_,
                                static_cast<size_t>(field_.num_elements()), slot, input.ahead);
    } else {
      std::memcpy(slot, input.record.data + offset_, bytes_);
    }
    return Status::ok();
  }

 private:
  const Field field_;
  const size_t offset_;
  const size_t bytes_;
  const int index_;
};

class CopyVariableField : public VariableTransform {
 public:
  CopyVariableField(int field, DType dtype, std::vector<int64_t> row_shape, int64_t max_rows)
      : field_(field), dtype_(dtype), row_shape_(row_shape) {
    row_bytes_ = dtype_size(dtype);
    for (int64_t d : row_shape) row_bytes_ *= static_cast<size_t>(d);
    capacity_ = {max_rows};
    capacity_.insert(capacity_.end(), row_shape.begin(), row_shape.end());
  }
  DType dtype() const override { return dtype_; }
  std::vector<int64_t> sample_shape() const override { return capacity_; }
  bool copies_views() const override { return true; }
  Status apply_sized(const SampleInput& input, uint8_t* slot, int64_t* shape) const override {
    int64_t rows = 0;
    if (input.viewed.views) {  // a computed field (record_views.h), written straight into the slot
      rows = static_cast<int64_t>(input.viewed.views->rows(input.viewed.record, field_));
      if (Status fits = within_capacity(rows); !fits.is_ok()) return fits;
      input.viewed.views->write_rows(input.viewed.record, field_, slot);
    } else {
      Result<ByteSpan> bytes = variable_field(*input.schema, input.record, field_);
      if (!bytes.is_ok()) return bytes.status();
      const size_t size = bytes.value().size;
      if (size % row_bytes_ != 0)
        return corrupt(fmt::format("{} bytes are not whole rows of {} bytes", size, row_bytes_));
      rows = static_cast<int64_t>(size / row_bytes_);
      if (Status fits = within_capacity(rows); !fits.is_ok()) return fits;
      if (size > 0) std::memcpy(slot, bytes.value().data, size);
    }
    shape[0] = rows;
    for (size_t d = 0; d < row_shape_.size(); ++d) shape[d + 1] = row_shape_[d];
    return Status::ok();
  }

 private:
  Status within_capacity(int64_t rows) const {
    if (rows <= capacity_[0]) return Status::ok();
    return invalid_argument(
        fmt::format("{} rows, more than the capacity of {}", rows, capacity_[0]));
  }

  const int field_;
  const DType dtype_;
  const std::vector<int64_t> row_shape_;
  size_t row_bytes_ = 0;
  std::vector<int64_t> capacity_;
};

class NormalizeField : public Transform {
 public:
  NormalizeField(const Schema& schema, int field, const Normalization& normalization)
      : field_(schema.fields()[field]),
        offset_(schema.fixed_offset(field)),
        normalization_(normalization) {}
  DType dtype() const override { return DType::kFloat32; }
  std::vector<int64_t> sample_shape() const override { return field_.shape; }
  size_t record_prefix() const override { return offset_ + field_.fixed_bytes(); }
  Status apply(const SampleInput& input, uint8_t* slot) const override {
    normalization_.apply(input.record.data + offset_, reinterpret_cast<float*>(slot), 1);
    return Status::ok();
  }

 private:
  const Field field_;
  const size_t offset_;
  const Normalization normalization_;
};

}  // namespace

std::shared_ptr<const Transform> copy_field(const Schema& schema, int field) {
  return std::make_shared<CopyField>(schema, field);
}

std::shared_ptr<const Transform> copy_variable_field(int field, DType dtype,
                                                     std::vector<int64_t> row_shape,
                                                     int64_t max_rows) {
  return std::make_shared<CopyVariableField>(field, dtype, std::move(row_shape), max_rows);
}

std::shared_ptr<const Transform> normalize_field(const Schema& schema, int field,
                                                 const Normalization& normalization) {
  return std::make_shared<NormalizeField>(schema, field, normalization);
}

}  // namespace stoker
