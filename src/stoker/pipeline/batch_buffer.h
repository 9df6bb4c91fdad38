#pragma once
// BatchBuffer and BufferPool: the memory batches are assembled in (docs/DESIGN.md contracts 4, 6).
// A buffer holds one contiguous block per batch field, sized for a full batch; a pool recycles
// buffers instead of reallocating them. Buffers are handed out as shared_ptr whose deleter
// returns them to the pool (or frees them if the pool is gone or already holds enough), so a
// batch may outlive the loader that made it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "stoker/pipeline/batch_layout.h"
#include "stoker/pipeline/host_allocator.h"
#include "stoker/util/status.h"
#include "stoker/util/thread_annotations.h"

namespace stoker {

// One batch's memory and what was put in it. Written by one worker, then read by the consumer.
struct BatchBuffer {
  std::vector<std::shared_ptr<uint8_t>> fields;  // per BatchField: capacity * slot_bytes
  int64_t capacity = 0;                          // samples the buffer can hold
  int64_t size = 0;                              // samples it holds now
  int64_t epoch = 0;
  int64_t batch = 0;             // batch number within the epoch's plan
  int64_t position_after = 0;    // global position once this batch is consumed (resume)
  int64_t skipped = 0;           // records dropped under the skip policy
  int64_t padding = 0;           // samples at its end that are padding (EpochPlan::padding)
  std::vector<int64_t> records;  // each sample's dataset record, in batch order
  Status status;                 // the first error met while building the batch
  // Per field, empty for a fixed one: a variable field's sample shapes (sample k's rank values
  // at k * rank) and, once the batch is complete, its largest sample's shape
  // (variable_samples.h). Allocated with the buffer, reused.
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<int64_t>> largest;
  // The engine's working state while workers build the batch's pieces (reused, not
  // reallocated): which samples failed, and each piece's first failure.
  std::vector<uint8_t> failed;
  std::vector<Status> piece_status;
  std::vector<SampleCounters> piece_counters;  // what each piece's transforms counted
};

// Thread-safe.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  // Buffers of `capacity` samples of the fields of `layout`; at most `max_idle` free buffers
  // are kept for reuse.
  static std::shared_ptr<BufferPool> create(const BatchLayout& layout, int64_t capacity,
                                            size_t max_idle, HostAllocator allocator);

  // A recycled buffer, or a new one if none is idle. Its size/status fields are reset.
  std::shared_ptr<BatchBuffer> acquire() STOKER_EXCLUDES(mutex_);
  // A recycled buffer, or null if none is idle. Never allocates, so it is cheap under a
  // caller's lock (a page-locked allocator takes milliseconds).
  std::shared_ptr<BatchBuffer> acquire_idle() STOKER_EXCLUDES(mutex_);
  // Buffers allocated so far (for tests and memory accounting).
  size_t allocations() const STOKER_EXCLUDES(mutex_);

 private:
  BufferPool(std::vector<size_t> field_bytes, std::vector<size_t> ranks, int64_t capacity,
             size_t max_idle, HostAllocator allocator);
  // `buffer` reset (size, status) and owned by a shared_ptr that gives it back.
  std::shared_ptr<BatchBuffer> hand_out(std::unique_ptr<BatchBuffer> buffer);
  void give_back(BatchBuffer* buffer) STOKER_EXCLUDES(mutex_);

  const std::vector<size_t> field_bytes_;  // bytes of each field's block
  const std::vector<size_t> ranks_;        // each variable field's sample rank; 0 fixed
  const int64_t capacity_;
  const size_t max_idle_;
  HostAllocator allocator_;
  mutable Mutex mutex_;
  std::vector<std::unique_ptr<BatchBuffer>> idle_ STOKER_GUARDED_BY(mutex_);
  size_t allocations_ STOKER_GUARDED_BY(mutex_) = 0;
};

}  // namespace stoker
