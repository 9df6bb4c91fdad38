#include "stoker/pipeline/transform.h"

#include <cstring>

#include "stoker/pipeline/normalization.h"

namespace stoker {
namespace {

class CopyField : public Transform {
 public:
  CopyField(const Schema& schema, int field)
      : field_(schema.fields()[field]),
        offset_(schema.fixed_offset(field)),
        bytes_(field_.fixed_bytes()) {}
  DType dtype() const override { return field_.dtype; }
  std::vector<int64_t> sample_shape() const override { return field_.shape; }
  size_t record_prefix() const override { return offset_ + bytes_; }
  Status apply(const SampleInput& input, uint8_t* slot) const override {
    std::memcpy(slot, input.record.data + offset_, bytes_);
    return Status::ok();
  }

 private:
  const Field field_;
  const size_t offset_;
  const size_t bytes_;
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

std::shared_ptr<const Transform> normalize_field(const Schema& schema, int field,
                                                 const Normalization& normalization) {
  return std::make_shared<NormalizeField>(schema, field, normalization);
}

}  // namespace stoker
