#pragma once
// LoaderCore: the loader without LibTorch. Batches of plain host buffers from a dataset, built
// ahead of the consumer by a persistent pool of worker threads straight into pooled buffers, in
// an order that is a function of (seed, epoch, rank, world_size, batch_size, last_batch,
// shuffle_window, ra_reps and the shards' record counts), or for an explicit epoch the caller's
// (a torch Sampler's), and never of worker count or timing (docs/DESIGN.md contracts 1-6).
// Everything the loader decides — order, state()/restore() (elastic too), option checks and auto
// values, verify-once, the error policy, the rule of one live epoch, stats — lives here; the
// LibTorch `Loader` (loader.h) and the Python binding only wrap the buffers (as at::Tensor views,
// or DLPack).
//
//   auto dataset = stoker::Dataset::open(dir).value_or_throw();
//   stoker::LoaderCore loader(dataset, options);
//   for (int64_t e = loader.state().epoch; e < epochs; ++e) {
//     stoker::LoaderCore::Epoch epoch = loader.epoch(e);
//     stoker::HostBatch batch;
//     while (epoch.next(batch)) { const stoker::HostField& x = batch["image"]; ... }
//   }
//
// Thread-safety: one consumer thread per loader; destroying it mid-epoch cancels the work in
// flight and joins its workers. An Epoch left mid-way leaves at most `prefetch` batches built
// ahead; the next epoch() drops them unless they are the ones it needs.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stoker/pipeline/batch_layout.h"
#include "stoker/pipeline/host_allocator.h"
#include "stoker/pipeline/loader_settings.h"
#include "stoker/pipeline/pipeline_stats.h"
#include "stoker/pipeline/sampler.h"
#include "stoker/pipeline/tuning_report.h"
#include "stoker/store/dataset.h"
#include "stoker/trace/tracer.h"

namespace stoker {

// Private to the pipeline (src/stoker/pipeline/).
struct BatchBuffer;
class BatchEngine;
class BufferPool;
class VerifiedSet;
class WorkerTuner;

// Under the skip policy, the records an epoch may begin with, every one bad, before it is an
// error (LoaderCore::Epoch::next).
inline constexpr int64_t kAllBadRecords = 10'000;

// What a loader delivers (its settings, how it runs, are the base: loader_settings.h).
struct LoaderOptions : LoaderSettings {
  int64_t batch_size = 256;
  uint64_t seed = 0;
  bool shuffle = true;
  LastBatch last_batch = LastBatch::kShort;  // the epoch's tail: short, dropped or padded
  int rank = 0;
  int world_size = 1;
  // The global order (global_order.h) by its registered name and parameters (order_registry.h:
  // "mixture" and its weights, over a dataset of several parts, store/mixed_shard_source.h);
  // "": "global" or "shard_window" as shuffle_window says. A resume keeps it (the caller's).
  std::string order;
  std::vector<std::pair<std::string, ParamValue>> order_params;
  std::vector<FieldRequest> fields;  // empty: every fixed field as stored
  // Run on each finished batch (MixUp, CutMix: batch_transform.h); null: none.
  std::shared_ptr<const BatchTransform> batch_transform;
  // Receives the workers' and the consumer's "pipeline" spans (docs/ARCHITECTURE.md, trace/);
  // null: not traced. Borrowed: must outlive the loader.
  Tracer* tracer = nullptr;
};

// Where a loader is in its sequence: enough to continue it exactly, with any world size.
struct LoaderState {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t position = 0;                  // global samples of `epoch` consumed by all ranks together
  int64_t shuffle_window = kShuffleAll;  // the order's (LoaderSettings::shuffle_window)
  int64_t ra_reps = 1;                   // the order's (LoaderSettings::ra_reps)
};

// One field of a batch: a C-contiguous array in a pooled buffer. A variable field's
// (BatchField::variable) samples differ in shape: `sizes` holds sample k's shape at
// k * (rank of shape - 1), `shape` is [batch size, the largest sample's shape...] and sample k
// lies at data + k * strides[0] elements: C-contiguous of its own shape, or, padded, on the grid
// of `strides` with zeros around it (then the whole field is one strided array).
struct HostField {
  std::string name;
  DType dtype = DType::kUint8;
  std::vector<int64_t> shape;    // [batch size, sample shape...]
  std::vector<int64_t> strides;  // in elements, C-contiguous (a variable field's: its slots')
  void* data = nullptr;
  const int64_t* sizes = nullptr;  // a variable field's sample shapes; null for a fixed field
  bool padded = false;             // a variable field's layout (BatchField::padded)
};

// One batch of plain buffers. `owner` keeps the pooled buffer alive: it returns to the pool once
// every copy of `owner` is gone (DLPack deleters and at::Tensor views hold one).
struct HostBatch {
  std::vector<HostField> fields;
  int64_t size = 0;
  int64_t epoch = 0;
  int64_t index = 0;    // batch number within the epoch
  int64_t skipped = 0;  // bad samples dropped from it (skip policy)
  int64_t padding = 0;  // samples at its end repeating the epoch's first ones (EpochPlan::padding)
  std::vector<int64_t> records;  // each sample's dataset record (Dataset::record_error names it)
  std::shared_ptr<const void> owner;

  // The field `name`; throws Error (kInvalidArgument) if there is none.
  const HostField& operator[](const std::string& name) const;
};

class LoaderCore {
 public:
  // The batches of one epoch. Move-only; borrows its loader, which must outlive it. Only one is
  // live per loader at a time.
  class Epoch {
   public:
    Epoch(Epoch&& other) noexcept;
    Epoch& operator=(Epoch&&) = delete;
    ~Epoch();
    // The next batch into `out` (replacing what it held); false after the last. Throws Error
    // for a batch that failed (naming shard and record) under the raise policy. Under the skip
    // policy a batch with no record left is left out (never delivered empty: the state moves
    // past it); Error (kCorrupt) where leaving one out would give this rank fewer batches than
    // its peers (world_size > 1), and where the epoch has no good record in its first
    // kAllBadRecords records or at all.
    bool next(HostBatch& out);
    // What next_for() found.
    enum class Next { kBatch, kEnd, kTimedOut };
    // As next(), but waits at most `timeout` for a batch still being built. kTimedOut leaves
    // the epoch and `out` as they were, so a caller can check for an interruption (Ctrl-C in
    // Python) between waits and call again. With workers == 0 the batch is built inline, however
    // long it takes, unless `interrupted` (may be empty; polled per sample and every ~50 ms of a
    // fetch) turns true: that ends the build with kTimedOut, and the next call builds the same
    // batch again.
    Next next_for(HostBatch& out, std::chrono::nanoseconds timeout,
                  const std::function<bool()>& interrupted = {});
    // Batches in this epoch from where it started (fewer are delivered where the skip policy
    // leaves some out).
    int64_t size() const;

   private:
    friend class LoaderCore;
    explicit Epoch(LoaderCore* loader) : loader_(loader) {}
    // Hands `buffer` (a batch, or nullptr after the last) out as `out`; throws for a failed one,
    // and at the end of an epoch whose every record the skip policy left out.
    bool deliver(std::shared_ptr<BatchBuffer> buffer, HostBatch& out);
    // Whether `out`, just delivered, goes to the consumer: not an empty one under the skip
    // policy (next()'s errors).
    bool keep(const HostBatch& out);
    // The error of epoch `e` with no good record in the batches taken.
    [[noreturn]] void throw_none_good(int64_t e) const;
    LoaderCore* loader_;
    int64_t taken_ = 0;  // batches delivered from the engine
    bool good_ = false;  // one of them held a record
  };

  // The one check of the options (the engine and the sampler below assume it): throws Error
  // (kInvalidArgument) naming the option and its value for one outside its range
  // ("workers must be at most 1024, not 2000"), and for fields the dataset lacks or an empty
  // dataset. `allocator` makes the batch buffers (pinned memory for a CUDA consumer). Starts
  // the workers; they live until the loader is destroyed.
  LoaderCore(std::shared_ptr<const Dataset> dataset, LoaderOptions options,
             HostAllocator allocator = default_host_allocator());
  ~LoaderCore();
  LoaderCore(const LoaderCore&) = delete;
  LoaderCore& operator=(const LoaderCore&) = delete;

  // The batches of epoch `e` for this rank; if the loader was restored to a position inside
  // epoch `e`, the epoch starts there. Throws Error (kInvalidArgument) if another Epoch of this
  // loader is live or e < 0, and Error (kCancelled), the loader as before, if the thread's
  // cancellation in scope (util/cancel_scope.h) ends the build of the epoch's order. The
  // workers build the next epoch's first batches while this one ends.
  Epoch epoch(int64_t e);
  // An explicit epoch: the batches of `batches` (EpochPlan::of_batches, over this loader's
  // dataset and batch_size) from its start, read as any epoch's are. After batch b, state() is
  // (e, batches.start + the sequence's samples through b); after the last, (e + 1, 0). Nothing
  // is built ahead behind it. Throws Error (kInvalidArgument) as epoch(e) does, and for
  // `batches` that of_batches refuses (an index outside the dataset, naming its batch), before
  // any work.
  Epoch epoch(int64_t e, ExplicitBatches batches);
  // Batches per epoch on this rank (from the epoch start).
  int64_t batches_per_epoch() const;
  // Positions of an epoch of the loader's own order (GlobalOrder::epoch_size: the records, a
  // mixture's samples per epoch, K x the records for "per_record"): a state's position lies
  // below it.
  int64_t epoch_samples() const;
  // This rank's plan of epoch `e` from its start: the indices epoch(e) reads, in its order
  // (whatever the order: a mixture's too). Throws Error (kInvalidArgument) for e < 0.
  EpochPlan plan(int64_t e) const;
  // Where the loader is: the epoch of the last batch delivered and the global position after it
  // (or the next epoch at position 0 once an epoch is complete).
  LoaderState state() const { return state_; }
  // Continue from `state` (saved by any loader over the same dataset, any world size). Throws
  // Error (kInvalidArgument) if the seed or shuffle window differs, a number is negative, or an
  // Epoch is live.
  void restore(const LoaderState& state);

  // Options with auto values resolved. A tuned loader's workers and prefetch are the most it
  // may use (its pool's size); tuning() says what it uses.
  const LoaderOptions& options() const { return options_; }
  // A tuned loader's (WorkerCount::tuned()) choice so far: settled, or the setting in use
  // and what was measured; nullopt for a loader of fixed workers. Tuning runs in the
  // consumer's next() calls: the first ~100 batches, measured across epochs (the pause between
  // epochs is not counted).
  std::optional<TuningReport> tuning() const;
  const Dataset& dataset() const { return *dataset_; }
  const BatchLayout& layout() const { return layout_; }
  // Per-stage time and counts since construction.
  const PipelineStats& stats() const { return *stats_; }
  // Host memory of the batch buffers allocated so far (the bound of contract 6: it stays at
  // about prefetch + 2 buffers unless the caller keeps batches alive).
  size_t buffer_bytes() const;

 private:
  std::shared_ptr<const Dataset> dataset_;
  LoaderOptions options_;
  BatchLayout layout_;
  std::shared_ptr<PipelineStats> stats_;
  std::shared_ptr<BufferPool> pool_;
  std::unique_ptr<BatchEngine> engine_;
  std::vector<HostField> field_shapes_;  // per field: shape for a full batch, strides, name
  // Throws Error (kInvalidArgument) unless epoch `e` may start now (epoch()'s checks).
  void check_epoch_start(int64_t e) const;
  // Marks an epoch the engine was started on as live, and returns it.
  Epoch begin_epoch();
  // Sets the engine's active workers and window to the tuner's.
  void apply_tuning();
  // A batch was delivered: feeds the tuner, if any and not settled, and applies its change.
  void observe_batch();

  std::unique_ptr<WorkerTuner> tuner_;  // a tuned loader's
  LoaderState state_;
  bool epoch_live_ = false;
  int64_t epoch_batches_ = 0;  // of the live epoch
};

}  // namespace stoker
