#pragma once
// Loader: the LibTorch face of LoaderCore (loader_core.h, which holds all the loader's
// behaviour). Each batch field becomes an at::Tensor view of the pooled buffer, moved to the
// loader's device by DeviceFeed (pinned buffers and side-stream copies for CUDA).
//
//   auto dataset = stoker::Dataset::open(dir).value_or_throw();
//   stoker::Loader loader(dataset, options);
//   for (int64_t e = loader.state().epoch; e < epochs; ++e)
//     for (stoker::Batch& batch : loader.epoch(e)) { at::Tensor x = batch["image"]; ... }
//
// Thread-safety: one consumer thread per Loader; destroying it mid-epoch cancels and joins.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/pipeline/loader_core.h"

namespace stoker {

class DeviceFeed;

// One batch. Its tensors are views of a pooled buffer and keep that buffer alive themselves;
// the buffer returns to the pool once the Batch and every tensor taken from it are gone. A
// caller that keeps tensors across many steps should clone() to let buffers recycle.
class Batch {
 public:
  // The field `name` as a tensor [size, sample shape...] on the loader's device; a padded
  // variable field's is [size, largest sample...], zeros around each sample. Throws Error if
  // the batch has no such field, or it is a variable field laid out as a list (samples()).
  const at::Tensor& operator[](const std::string& name) const;
  // A variable field's samples, each a tensor of its own shape viewing its slot (padded or
  // not), and their shapes, int64 [size, rank] (HostField::sizes). Throws Error for a fixed
  // field or none.
  std::vector<at::Tensor> samples(const std::string& name) const;
  // The field `name` as the loader built it on the host (pinned for CUDA, what operator[]'s
  // tensor was copied from): read without waiting for the device, while the batch lives.
  // Throws Error as operator[] does.
  at::Tensor host(const std::string& name) const;
  at::Tensor sizes(const std::string& name) const;
  int64_t size() const { return host_.size; }
  int64_t epoch() const { return host_.epoch; }
  int64_t index() const { return host_.index; }      // batch number within the epoch
  int64_t skipped() const { return host_.skipped; }  // bad samples dropped (skip policy)
  // Deep copies of every field but list-laid variable ones, independent of the pool.
  std::map<std::string, at::Tensor> clone() const;

 private:
  friend class EpochRange;
  // The host field `name`; throws Error if there is none.
  size_t index_of(const std::string& name) const;
  HostBatch host_;
  std::vector<at::Tensor> tensors_;
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

  Iterator begin();
  Iterator end() { return Iterator(this); }
  // Batches in this epoch from where it started (LoaderCore::Epoch::size).
  int64_t size() const { return epoch_.size(); }

 private:
  friend class Loader;
  EpochRange(class Loader& loader, LoaderCore::Epoch epoch);
  // Takes the next batch; throws Error if it failed.
  void advance();

  class Loader* loader_;
  LoaderCore::Epoch epoch_;
  Batch current_;
  bool started_ = false;
  bool done_ = false;
};

class Loader {
 public:
  // Throws Error (kInvalidArgument) for bad options or fields the dataset lacks, and for
  // variable fields (Transform::as_variable) on a device other than the CPU (not built yet).
  Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options,
         c10::Device device = c10::kCPU);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The batches of epoch `e` (LoaderCore::epoch: one live at a time, resumes inside `e`).
  EpochRange epoch(int64_t e);
  int64_t batches_per_epoch() const { return core_.batches_per_epoch(); }
  LoaderState state() const { return core_.state(); }
  void restore(const LoaderState& state) { core_.restore(state); }

  const LoaderOptions& options() const { return core_.options(); }
  c10::Device device() const { return device_; }
  const Dataset& dataset() const { return core_.dataset(); }
  const BatchLayout& layout() const { return core_.layout(); }
  const PipelineStats& stats() const { return core_.stats(); }
  size_t buffer_bytes() const { return core_.buffer_bytes(); }
  // A tuned loader's choice (LoaderCore::tuning); nullopt for fixed workers.
  std::optional<TuningReport> tuning() const { return core_.tuning(); }

 private:
  friend class EpochRange;
  c10::Device device_;
  std::unique_ptr<DeviceFeed> feed_;  // before core_: it makes the core's host allocator
  LoaderCore core_;
};

}  // namespace stoker
