#pragma once
// BatchTransform: how a finished batch is changed as a whole (MixUp, CutMix: samples mixed with
// each other, labels made soft targets). The worker that finalises a batch (batch_engine.h) runs
// the loader's batch transform once on it, after the error policy compacted it, in place, before
// the batch is published (docs/DESIGN.md contract 4: no copy of the batch).
//
// Determinism (contract 1): its draws come from input.rng(), a counter-based stream of (seed,
// epoch, the batch's global position, rank) (util/rng.h, batch_stream): the same batches with 1
// or 16 workers and after a resume.
//
// Errors (contract 5): a Status for a batch it cannot change (a label out of range), which
// fails the batch as a sample's error would, naming the operation and the value.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/store/schema.h"
#include "stoker/util/rng.h"
#include "stoker/util/status.h"

namespace stoker {

// A batch field's type: what each sample of it is.
struct BatchFieldType {
  std::string name;
  DType dtype = DType::kUint8;
  std::vector<int64_t> sample_shape;
};

// One field of a batch being changed: `size` samples, sample k at data + k * stride bytes, of
// `type` as the samples' transforms wrote it. A field the transform changes holds its output
// type afterwards, C-contiguous (k * its sample bytes); `stride` is at least that.
struct BatchFieldData {
  const BatchFieldType* type = nullptr;
  uint8_t* data = nullptr;
  size_t stride = 0;
};

// What a batch transform sees of one batch. Borrowed: valid during the call only.
struct BatchInput {
  int64_t size = 0;  // samples, at least 1
  int64_t epoch = 0;
  int64_t position = 0;  // global position after the batch (BatchBuffer::position_after)
  int64_t rank = 0;
  uint64_t seed = 0;                   // the loader's
  std::vector<BatchFieldData> fields;  // in the layout's order

  // The batch's own random stream: CounterRng(seed, batch_stream(epoch, position, rank)).
  CounterRng rng() const { return CounterRng(seed, batch_stream(epoch, position, rank)); }
};

// Thread-safety: apply() runs concurrently on every worker (each on its own batch).
class BatchTransform {
 public:
  virtual ~BatchTransform() = default;
  // The batch's fields after the transform, given them as the samples write them (the same
  // names, in order; a changed field may change dtype and shape); kInvalidArgument naming the
  // operation and the field when it cannot apply to them.
  virtual Result<std::vector<BatchFieldType>> outputs(
      const std::vector<BatchFieldType>& fields) const = 0;
  // Changes the batch in place. `input.fields` are of the types given to outputs().
  virtual Status apply(const BatchInput& input) const = 0;
};

}  // namespace stoker
