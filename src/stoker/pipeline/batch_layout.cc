#include "stoker/pipeline/batch_layout.h"

#include <algorithm>
#include <cstring>

#include "stoker/pipeline/normalize_kernel.h"

namespace stoker {
namespace {

// Samples ahead of the one being written whose records are prefetched.
constexpr size_t kPrefetchDistance = 8;

}  // namespace

Result<BatchLayout> BatchLayout::create(const Schema& schema,
                                        const std::vector<FieldRequest>& requests) {
  BatchLayout layout;
  for (const FieldRequest& request : requests) {
    int f = schema.find(request.name);
    if (f < 0) return invalid_argument("the dataset has no field '" + request.name + "'");
    const Field& field = schema.fields()[f];
    if (!field.is_fixed())
      return invalid_argument("field '" + request.name +
                              "' is variable-size bytes; it needs a decoder");
    BatchField out;
    out.name = field.name;
    out.schema_field = f;
    out.record_offset = schema.fixed_offset(f);
    out.dtype = field.dtype;
    out.sample_shape = field.shape;
    out.sample_bytes = field.fixed_bytes();
    if (request.normalize) {
      if (field.dtype != DType::kUint8)
        return invalid_argument("field '" + request.name + "' is not uint8; only uint8 normalises");
      const int64_t channels = field.shape.size() == 3 ? field.shape[0] : 1;
      const size_t n = request.mean.size();
      if (n != request.std.size() || (n != 1 && static_cast<int64_t>(n) != channels))
        return invalid_argument(
            "field '" + request.name + "': mean and std need " +
            (channels == 1 ? std::string("1 value each (one channel: only a [C,H,W] field has "
                                         "several)")
                           : "1 or " + std::to_string(channels) + " values each"));
      out.normalize = true;
      out.dtype = DType::kFloat32;
      out.sample_bytes = field.fixed_bytes() * sizeof(float);
      // One mean and std serve every channel: one run over the whole sample.
      const int64_t runs = n == 1 ? 1 : channels;
      out.run_elements = field.num_elements() / runs;
      for (int64_t c = 0; c < runs; ++c) {
        float mean = request.mean[n == 1 ? 0 : c], std = request.std[n == 1 ? 0 : c];
        if (std == 0.0f) return invalid_argument("field '" + request.name + "': std is zero");
        out.scale.push_back(1.0f / (255.0f * std));
        out.bias.push_back(-mean / std);
      }
    }
    layout.record_bytes_read_ =
        std::max(layout.record_bytes_read_, out.record_offset + field.fixed_bytes());
    layout.fields_.push_back(std::move(out));
  }
  return layout;
}

BatchLayout BatchLayout::copy_all(const Schema& schema) {
  std::vector<FieldRequest> requests;
  for (const Field& f : schema.fields()) {
    if (f.is_fixed()) requests.push_back({f.name});
  }
  return create(schema, requests).value_or_throw();
}

int BatchLayout::find(const std::string& name) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

void BatchLayout::write(int f, const uint8_t* src, uint8_t* dst) const {
  const BatchField& field = fields_[f];
  if (!field.normalize) {
    std::memcpy(dst, src, field.sample_bytes);
    return;
  }
  auto* out = reinterpret_cast<float*>(dst);
  for (size_t c = 0; c < field.scale.size(); ++c) {
    normalize_u8(src + c * field.run_elements, out + c * field.run_elements, field.run_elements,
                 field.scale[c], field.bias[c]);
  }
}

void BatchLayout::write_samples(int f, const uint8_t* src, size_t n, uint8_t* dst) const {
  const BatchField& field = fields_[f];
  const size_t stored_bytes =
      field.normalize ? field.sample_bytes / sizeof(float) : field.sample_bytes;
  if (field.scale.size() == 1) {  // one run over all n samples
    normalize_u8(src, reinterpret_cast<float*>(dst), static_cast<int64_t>(n * stored_bytes),
                 field.scale[0], field.bias[0]);
    return;
  }
  for (size_t k = 0; k < n; ++k) write(f, src + k * stored_bytes, dst + k * field.sample_bytes);
}

void BatchLayout::write_batch(const uint8_t* const* records, size_t n, uint8_t* const* dst) const {
  auto prefetch = [this](const uint8_t* record) {
    for (size_t at = 0; at < record_bytes_read_ + 63; at += 64) __builtin_prefetch(record + at);
  };
  for (size_t k = 0; k < std::min(n, kPrefetchDistance); ++k) prefetch(records[k]);
  for (size_t k = 0; k < n; ++k) {
    if (k + kPrefetchDistance < n) prefetch(records[k + kPrefetchDistance]);
    for (size_t f = 0; f < fields_.size(); ++f) {
      const BatchField& field = fields_[f];
      write(static_cast<int>(f), records[k] + field.record_offset, dst[f] + k * field.sample_bytes);
    }
  }
}

}  // namespace stoker
