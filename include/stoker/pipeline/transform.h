#pragma once
// Transform: how one field of a batch is computed from one record (decode, crop, resize, flip,
// normalise, ... or a plain copy). The engine calls a field's transform once per sample, on a
// worker thread, with the record's bytes and the sample's identity, and the transform writes
// the sample straight into its slot of the pooled batch buffer (docs/DESIGN.md contract 4).
//
// Determinism (contract 1): a transform's output must depend only on its SampleInput. Random
// augmentations draw from input.rng(), a counter-based stream of (seed, epoch, sample index and
// its repeat):
// the same draws with 1 or 16 workers, on any rank, after any resume.
//
// Errors (contract 5): a transform returns a Status for a sample it cannot make (a corrupt
// JPEG, ...); it may also throw anything. The engine names dataset, shard and record and
// applies the loader's error policy (raise, or skip and count); the worker survives.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stoker/store/record_view.h"
#include "stoker/store/record_views.h"
#include "stoker/store/schema.h"
#include "stoker/util/rng.h"
#include "stoker/util/status.h"

namespace stoker {

class Normalization;
class VariableTransform;

// What transforms did, which they add to as they apply (SampleInput::counters); the engine sums
// them into PipelineStats. One worker's: not shared between threads.
struct SampleCounters {
  int64_t video_frames_decoded = 0;    // frames a video decoder decoded (decode_clip)
  int64_t video_frames_delivered = 0;  // frames its clips hold
};

// What a transform sees of one sample. Borrowed: valid during the call only.
struct SampleInput {
  // The whole record: fixed fields, bytes-field length table, payloads. At least
  // schema->min_record_bytes() long; decode fields with record_view.h (variable_field).
  ByteSpan record;
  // A record read in place (ShardReader::viewed): its fields' views, which the copy of a stored
  // field reads; `record` is then empty where every field of the batch is such a copy
  // (Transform::copies_views).
  ViewedRecord viewed;
  // Bytes a copy of a viewed field brings into cache while it writes (the next sample's views:
  // BatchLayout::write_samples), or none.
  ByteSpan ahead;
  const Schema* schema = nullptr;
  // The sample's number: its global dataset index, or r K + k for part k of record r where the
  // order gives each record K samples (IndexSpan::sample: "per_record").
  int64_t index = 0;
  // Which of its stored record's samples this is, where a record gives several (a video's
  // clips: Dataset::part, or the "per_record" order's); 0 otherwise.
  int64_t part = 0;
  int64_t epoch = 0;
  int64_t repeat = 0;  // which repeat of the sample in the epoch's order (SamplerOptions::repeats)
  uint64_t seed = 0;   // the loader's seed
  // Which operation of the field draws: 0 the field's transform, k >= 1 the k-th operation
  // applied after it (field_pipeline.h), each with a stream of its own.
  uint64_t step = 0;
  SampleCounters* counters = nullptr;  // null: nothing is counted
  // Whether the sample is still wanted (false once the loader stops, or Ctrl-C ends a batch
  // built inline): an operation that blocks on I/O polls it or puts it in scope for the reads
  // it makes (util/cancel_scope.h). Null: never cancelled.
  const std::function<bool()>* cancelled = nullptr;

  // The sample's own random stream: CounterRng(seed, sample_stream(epoch, index, repeat)) for
  // step 0, else CounterRng(seed, derive_stream(sample_stream(epoch, index, repeat), step)).
  CounterRng rng() const {
    const uint64_t stream = sample_stream(epoch, index, repeat);
    return CounterRng(seed, step == 0 ? stream : derive_stream(stream, step));
  }
};

// Thread-safety: apply() is called concurrently from every worker; it must be const-safe.
class Transform {
 public:
  virtual ~Transform() = default;
  // The sample it writes: dtype (not kBytes) and shape; the batch adds a leading dimension.
  virtual DType dtype() const = 0;
  virtual std::vector<int64_t> sample_shape() const = 0;
  // Bytes at the start of a record that apply() reads, for the engine's prefetch; 0 if unknown.
  virtual size_t record_prefix() const { return 0; }
  // Whether apply() reads a viewed record through input.viewed alone (a stored field's copy),
  // so the record's bytes need not be built.
  virtual bool copies_views() const { return false; }
  // Writes one sample into `slot` (dtype_size(dtype()) × elements of sample_shape() bytes).
  virtual Status apply(const SampleInput& input, uint8_t* slot) const = 0;
  // This transform as one of variable samples, or null (a fixed one).
  virtual const VariableTransform* as_variable() const { return nullptr; }
};

// A transform whose samples differ in shape (a variable-length field, an image at its own
// size): sample_shape() is its capacity, the largest sample in every dimension, which sizes the
// slot (the pool stays preallocated); apply_sized() writes each sample and says its shape, which
// the batch carries (HostField::sizes).
class VariableTransform : public Transform {
 public:
  // Writes one sample C-contiguous at the start of `slot` and its shape into `shape`
  // (sample_shape().size() values). A sample over the capacity in any dimension is refused
  // before anything is written: a Status naming its size and the capacity.
  virtual Status apply_sized(const SampleInput& input, uint8_t* slot, int64_t* shape) const = 0;
  // Variable samples are written by apply_sized only.
  Status apply(const SampleInput&, uint8_t*) const final {
    return Status(StatusCode::kInternal, "a variable transform is applied by apply_sized");
  }
  const VariableTransform* as_variable() const final { return this; }
};

// Several fields of one sample made together from its record, under one set of random draws (an
// image and its boxes, labels and masks, moved by the same flip or crop; rows dropped from all
// of them at once): a detection sample's transforms, as torchvision's v2 applies them to (image,
// target). Each output is a variable sample (a field of the batch, FieldRequest's joint form);
// the layout calls apply() once per sample with every output's slot and shape.
// Thread-safety: apply() is called concurrently from every worker.
class JointTransform {
 public:
  struct Output {
    std::string name;
    DType dtype = DType::kUint8;
    std::vector<int64_t> capacity;  // the largest sample in every dimension, which sizes its slot
  };
  virtual ~JointTransform() = default;
  virtual const std::vector<Output>& outputs() const = 0;
  // Writes output o's sample C-contiguous at slots[o] and its shape into shapes[o]. A sample
  // over an output's capacity is refused before anything is written: a Status naming the field,
  // its size and the capacity.
  virtual Status apply(const SampleInput& input, uint8_t* const* slots,
                       int64_t* const* shapes) const = 0;
};

// Fixed field `field` of `schema`, copied as stored.
std::shared_ptr<const Transform> copy_field(const Schema& schema, int field);
// Bytes field `field` (of the records' schema) as a variable-length array of `dtype` [N,
// row_shape...], N at most `max_rows`: its bytes copied as stored, whose length must be a whole
// number of rows (kCorrupt otherwise). A bytes field as uint8 [N] is (kUint8, {}, max length).
std::shared_ptr<const Transform> copy_variable_field(int field, DType dtype,
                                                     std::vector<int64_t> row_shape,
                                                     int64_t max_rows);
// uint8 fixed field `field` of `schema` normalised to float32 by `normalization` (made for the
// field's shape).
std::shared_ptr<const Transform> normalize_field(const Schema& schema, int field,
                                                 const Normalization& normalization);

}  // namespace stoker
