#pragma once
// Loader: batches of at::Tensor from a dataset, built ahead of the consumer by worker threads
// straight into pooled buffers, in an order that is a function of (seed, epoch, rank,
// world_size, batch_size, drop_last) and never of worker count or timing (DESIGN.md 1-6).
//
//   auto dataset = stoker::Dataset::open(dir).value_or_throw();
//   stoker::Loader loader(dataset, options);
//   for (int64_t e = loader.state().epoch; e < epochs; ++e)
//     for (stoker::Batch& batch : loader.epoch(e)) { at::Tensor x = batch["image"]; ... }
//
// Thread-safety: one consumer thread per Loader; destroying it mid-epoch cancels and joins.

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/pipeline/batch_engine.h"
#include "stoker/pipeline/batch_layout.h"
#include "stoker/store/dataset.h"

namespace stoker {

class DeviceFeed;

enum class ErrorPolicy { kRaise, kSkip };

struct LoaderOptions {
  int64_t batch_size = 256;
  int workers = -1;  // threads building batches; 0 = inline on the consumer; -1 = auto
  // Batches built ahead of the consumer, >= 1; -1 = auto (auto_prefetch). A deeper window
  // lets workers sleep longer between wake-ups (see BatchEngine).
  int prefetch = -1;
  uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;
  int rank = 0;
  int world_size = 1;
  VerifyPolicy verify = VerifyPolicy::kOnce;   // when record checksums are checked
  ErrorPolicy on_error = ErrorPolicy::kRaise;  // kSkip drops and counts bad records
  std::vector<FieldRequest> fields;            // empty: every fixed field as stored
  torch::Device device = torch::kCPU;          // CUDA: pinned buffers, copies on a side stream
};

// Where a loader is in its sequence: enough to continue it exactly, with any world size.
struct LoaderState {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t position = 0;  // global samples of `epoch` consumed by all ranks together
};

// One batch. Its tensors are views of a pooled buffer and keep that buffer alive themselves;
// the buffer returns to the pool once the Batch and every tensor taken from it are gone. A
// caller that keeps tensors across many steps should clone() to let buffers recycle.
class Batch {
 public:
  // The field `name` as a tensor [size, sample shape...] on the loader's device.
  // Throws Error if the batch has no such field.
  const at::Tensor& operator[](const std::string& name) const;
  int64_t size() const { return size_; }
  int64_t epoch() const { return epoch_; }
  int64_t index() const { return index_; }      // batch number within the epoch
  int64_t skipped() const { return skipped_; }  // bad records dropped from it (skip policy)
  // Deep copies of every field, independent of the pool.
  std::map<std::string, at::Tensor> clone() const;

 private:
  friend class EpochRange;
  std::vector<std::string> names_;
  std::vector<at::Tensor> tensors_;
  int64_t size_ = 0, epoch_ = 0, index_ = 0, skipped_ = 0;
};

// The batches of one epoch, for range-for. Borrows its Loader: the Loader must outlive it.
class EpochRange {
 public:
  class Iterator {
   public:
    Batch& operator*() { return range_->current_; }
    Batch* operator->() { return &range_->current_; }
    Iterator& operator++() {
      range_->advance();
      return *this;
    }
    bool operator!=(const Iterator&) const { return !range_->done_; }

   private:
    friend class EpochRange;
    explicit Iterator(EpochRange* range) : range_(range) {}
    EpochRange* range_;
  };

  EpochRange(EpochRange&&) noexcept;
  ~EpochRange();
  Iterator begin();
  Iterator end() { return Iterator(this); }

 private:
  friend class Loader;
  EpochRange(class Loader& loader, std::unique_ptr<BatchEngine> engine);
  // Takes the next batch from the engine; throws Error if it failed.
  void advance();

  class Loader* loader_;
  std::unique_ptr<BatchEngine> engine_;
  Batch current_;
  bool started_ = false;
  bool done_ = false;
};

class Loader {
 public:
  // Throws Error (kInvalidArgument) for bad options or fields the dataset lacks.
  Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The batches of epoch `e` for this rank. If the loader was restored to a position inside
  // epoch `e`, the range starts there. Only one range may be live at a time.
  EpochRange epoch(int64_t e);
  // Batches per epoch on this rank (from the epoch start).
  int64_t batches_per_epoch() const;
  // Where the loader is: the epoch of the last batch delivered and the global position after
  // it (or the next epoch at position 0 once an epoch is complete).
  LoaderState state() const { return state_; }
  // Continue from `state` (saved by any loader over the same dataset, any world size).
  // Throws Error if the seed differs from the options'.
  void restore(const LoaderState& state);

  const LoaderOptions& options() const { return options_; }
  const Dataset& dataset() const { return *dataset_; }
  const BatchLayout& layout() const { return layout_; }
  // Per-stage time and counts since construction.
  const PipelineStats& stats() const { return *stats_; }
  // Host memory of the batch buffers allocated so far (the bound of contract 6: it stays at
  // about prefetch + 2 buffers unless the caller keeps batches alive).
  size_t buffer_bytes() const;

 private:
  friend class EpochRange;
  void on_batch(const BatchBuffer& buffer, bool last);

  std::shared_ptr<const Dataset> dataset_;
  LoaderOptions options_;
  BatchLayout layout_;
  Sampler sampler_;
  std::shared_ptr<BufferPool> pool_;
  std::shared_ptr<PipelineStats> stats_;
  std::shared_ptr<VerifiedSet> verified_;
  std::unique_ptr<DeviceFeed> feed_;
  LoaderState state_;
};

// Worker threads for `workers` = -1: one per hardware thread beyond the consumer's, at least 1.
int auto_workers();
// The prefetch depth "auto" picks for batches of `batch_bytes`: as many as fit in 16 MiB,
// at least 4 and at most 64. Small batches get a deep window because a window-full worker
// sleeps until half of it is free, and each wake-up costs the consumer a futex call.
int auto_prefetch(size_t batch_bytes);

}  // namespace stoker
