#pragma once
// BatchLayout: which fields a batch holds and the transform that writes each field's sample
// into its slot of a batch buffer (docs/DESIGN.md contract 4: straight into the pooled buffer, no
// per-sample allocation). A field is a stored fixed field copied as stored, a uint8 field
// normalised to float32 (Normalization), or any field computed by a caller's Transform (decode,
// augment, ...; variable-size bytes fields included), or several fields made together by a
// JointTransform (an image with its boxes, labels and masks). A batch transform (batch_transform.h)
// may then change whole batches, and the type of the fields it writes (labels to soft targets).
// Immutable after create(): thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/image/float_pixel.h"
#include "stoker/pipeline/batch_transform.h"
#include "stoker/pipeline/sampler.h"
#include "stoker/pipeline/transform.h"
#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

// What the caller wants of one field.
struct FieldRequest {
  FieldRequest(std::string name, bool normalize = false, std::vector<float> mean = {},
               std::vector<float> std = {}, image::UnitScale unit = image::UnitScale::kDivide)
      : name(std::move(name)),
        normalize(normalize),
        mean(std::move(mean)),
        std(std::move(std)),
        unit(unit) {}
  // A batch field `name` computed by `transform` (need not be a stored field's name).
  FieldRequest(std::string name, std::shared_ptr<const Transform> transform)
      : name(std::move(name)), normalize(false), transform(std::move(transform)) {}
  // Batch field `output` of `joint` (named as that output), made with the joint's other outputs
  // in one call per sample; a layout holds every output of a joint it is given.
  FieldRequest(std::shared_ptr<const JointTransform> joint, int output)
      : name(joint->outputs().at(output).name),
        normalize(false),
        joint(std::move(joint)),
        joint_output(output) {}

  std::string name;
  bool normalize;  // uint8 -> float32 (unit(x) - mean[c]) / std[c]; else copy as stored
  // One value, or one per channel: dim 0 of a [C,H,W] sample; any other shape is one channel.
  std::vector<float> mean;
  std::vector<float> std;
  image::UnitScale unit = image::UnitScale::kDivide;  // image/float_pixel.h
  std::shared_ptr<const Transform> transform;   // set: computes the field; the above is ignored
  std::shared_ptr<const JointTransform> joint;  // set: the field is output joint_output of it
  int joint_output = -1;
  // A variable transform's samples (Transform::as_variable) laid out padded: each batch on the
  // grid of its largest sample, zeros around each (one strided tensor). Else each sample
  // C-contiguous at its slot's start (a list of tensors).
  bool padded = false;
};

// One field of a batch as laid out in a buffer.
struct BatchField {
  std::string name;
  DType dtype = DType::kUint8;        // dtype in the batch
  std::vector<int64_t> sample_shape;  // per sample; the batch adds a leading dimension
  size_t sample_bytes = 0;
  std::shared_ptr<const Transform> transform;
  // What the transform writes per sample: the above unless the batch transform changes it.
  BatchFieldType written;
  // Bytes between two samples' slots while the batch is built: the larger of what the
  // transform writes and sample_bytes. The block holds capacity * slot_bytes.
  size_t slot_bytes = 0;
  // The transform's samples vary in shape (sample_shape is then the capacity): each batch
  // carries their shapes; null for a fixed field, whose path has no per-sample work added.
  const VariableTransform* variable = nullptr;
  bool padded = false;  // FieldRequest::padded
  // An output of a joint transform (a variable field): the first of its fields in the batch
  // runs it, for all of them, and holds in joint_fields the batch field of each output.
  std::shared_ptr<const JointTransform> joint;
  std::vector<int> joint_fields;
};

class BatchLayout {
 public:
  // Stored fields must exist and be fixed-size or variable-length (copied as stored, a variable
  // field of `max_lengths[name]` rows at most: the manifest's); normalisation needs a uint8
  // field and Normalization's mean/std rules; a transform must write a fixed dtype; names are
  // unique and there is at least one field; `batch`, if set, applies to the fields, which are
  // then all fixed; `padded` needs a variable field; a joint transform's outputs are all
  // requested. Errors are kInvalidArgument naming the field.
  static Result<BatchLayout> create(const Schema& schema, const std::vector<FieldRequest>& requests,
                                    std::shared_ptr<const BatchTransform> batch = nullptr,
                                    const std::map<std::string, uint64_t>& max_lengths = {});
  // Every fixed and variable-length field of the schema, copied as stored; kInvalidArgument if
  // there is none (a dataset of bytes fields only needs transforms); the rest as create's.
  static Result<BatchLayout> copy_all(const Schema& schema,
                                      std::shared_ptr<const BatchTransform> batch = nullptr,
                                      const std::map<std::string, uint64_t>& max_lengths = {});

  const std::vector<BatchField>& fields() const { return fields_; }
  // Index of the batch field called `name`, or -1.
  int find(const std::string& name) const;
  // Bytes of one sample over all fields (slots while the batch is built).
  size_t sample_bytes() const;
  // The transform of whole batches, or null.
  const std::shared_ptr<const BatchTransform>& batch_transform() const { return batch_; }

  // Writes samples k in [begin, end) of every field, computed from records[k] (and viewed[k],
  // if given: a record read in place has views, SampleInput::viewed; else views is null) (dataset
  // index samples[k] and its repeat, epoch `epoch`, loader seed `seed`), into dst[f] + k *
  // slot_bytes, and a variable field's sample shape into shapes[f] + k * its rank, prefetching
  // records a few samples ahead (`shapes` may be null where every field is fixed). With `failed`
  // null, stops at the first failing sample; otherwise skips samples with failed[k] set and sets
  // failed[k] for each sample that fails. Returns the first failure and sets *failed_at to its k. A
  // transform that throws fails its sample (kInternal). The message names the field; the caller
  // adds shard and record. `cancelled`, if set, is asked before each sample: true stops there with
  // kCancelled (the samples left unwritten), so a loader being destroyed need not finish heavy
  // samples. `parts` (may be null: all 0): which of its record's samples each is
  // (SampleInput::part, Dataset::part).
  Status write_samples(const ByteSpan* records, const IndexSpan& samples, size_t begin, size_t end,
                       int64_t epoch, uint64_t seed, uint8_t* const* dst, uint8_t* failed,
                       size_t* failed_at, const std::function<bool()>& cancelled = {},
                       int64_t* const* shapes = nullptr, const ViewedRecord* viewed = nullptr,
                       SampleCounters* counters = nullptr, const int64_t* parts = nullptr) const;
  // Whether every field copies a viewed record's views (Transform::copies_views): the engine
  // then passes viewed records (`viewed` above) without their bytes.
  bool copies_views() const { return copies_views_; }
  // True if a field is variable (BatchField::variable).
  bool any_variable() const { return any_variable_; }

 private:
  Status write_sample(const SampleInput& input, uint8_t* const* dst, int64_t* const* shapes,
                      size_t k) const;
  Status write_joint(const BatchField& field, const SampleInput& input, uint8_t* const* dst,
                     int64_t* const* shapes, size_t k) const;

  Schema schema_;  // of the records; transforms see it
  std::vector<BatchField> fields_;
  std::shared_ptr<const BatchTransform> batch_;
  size_t record_prefix_ = 0;  // bytes at the start of a record that the fields read
  bool any_variable_ = false;
  bool copies_views_ = true;
};

}  // namespace stoker
