#pragma once
// BatchLayout: which record fields a batch holds and how each sample is written into its slot
// of a batch buffer (DESIGN.md contract 4: decoded straight into the pooled buffer, no
// per-sample allocation). A field is either copied as stored (any fixed dtype), or — for uint8
// fields — normalised to float32 with a per-channel (x / 255 - mean) / std, computed as one
// multiply-add per pixel (x * scale + bias), vectorised, with an AVX2 variant picked at run
// time on CPUs that have it. Immutable after create(): thread-safe to share.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

// What the caller wants of one field.
struct FieldRequest {
  FieldRequest(std::string name, bool normalize = false, std::vector<float> mean = {},
               std::vector<float> std = {})
      : name(std::move(name)), normalize(normalize), mean(std::move(mean)), std(std::move(std)) {}

  std::string name;
  bool normalize;  // uint8 -> float32 (x/255 - mean[c]) / std[c]; else copy as stored
  // One value, or one per channel: dim 0 of a [C,H,W] sample; any other shape is one channel.
  std::vector<float> mean;
  std::vector<float> std;
};

// One field of a batch as laid out in a buffer.
struct BatchField {
  std::string name;
  int schema_field = 0;
  size_t record_offset = 0;           // where the field's bytes start in a record
  DType dtype = DType::kUint8;        // dtype in the batch
  std::vector<int64_t> sample_shape;  // per sample; the batch adds a leading dimension
  size_t sample_bytes = 0;
  bool normalize = false;
  // Normalising runs over consecutive elements: one per channel, or a single run over the
  // sample when one mean and std serve every channel.
  int64_t run_elements = 0;  // elements per run
  std::vector<float> scale;  // per run: 1 / (255 std)
  std::vector<float> bias;   // per run: -mean / std
};

class BatchLayout {
 public:
  // Every requested field must exist and be fixed-size; normalisation needs a uint8 field and
  // mean/std of size 1 or of the channel count, std non-zero. Errors are kInvalidArgument.
  static Result<BatchLayout> create(const Schema& schema,
                                    const std::vector<FieldRequest>& requests);
  // Every fixed field of the schema, copied as stored.
  static BatchLayout copy_all(const Schema& schema);

  const std::vector<BatchField>& fields() const { return fields_; }
  // Index of the batch field called `name`, or -1.
  int find(const std::string& name) const;
  // Writes one sample of field `f` from its stored bytes `src` into `dst` (sample_bytes).
  void write(int f, const uint8_t* src, uint8_t* dst) const;
  // Writes `n` samples of field `f` stored back to back at `src` into `dst` (n * sample_bytes);
  // a field normalised with one mean and std is one kernel call.
  void write_samples(int f, const uint8_t* src, size_t n, uint8_t* dst) const;
  // Writes samples 0..n-1 of every field from the records `records[k]` (pointers to their
  // bytes) into `dst[f] + k * sample_bytes`, prefetching the records a few samples ahead: the
  // gather a batch is built by, with no index reads and no per-sample allocation.
  void write_batch(const uint8_t* const* records, size_t n, uint8_t* const* dst) const;
  // Bytes at the start of a record that the fields read (what a prefetch must cover).
  size_t record_bytes_read() const { return record_bytes_read_; }

 private:
  std::vector<BatchField> fields_;
  size_t record_bytes_read_ = 0;
};

}  // namespace stoker
