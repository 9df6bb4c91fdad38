#pragma once
// LoaderCore: the loader without LibTorch. Batches of plain host buffers from a dataset, built
// ahead of the consumer by a persistent pool of worker threads straight into pooled buffers, in
// an order that is a function of (seed, epoch, rank, world_size, batch_size, last_batch) and
// never of worker count or timing (docs/DESIGN.md contracts 1-6). Everything the loader decides —
// order, state()/restore() (elastic too), option checks and auto values, verify-once, the error
// policy, the rule of one live epoch, stats — lives here; the LibTorch `Loader` (loader.h) and
// the Python binding only wrap the buffers (as at::Tensor views, or DLPack).
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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/pipeline/batch_buffer.h"
#include "stoker/pipeline/batch_layout.h"
#include "stoker/pipeline/sampler.h"
#include "stoker/pipeline/worker_tuner.h"
#include "stoker/store/dataset.h"
#include "stoker/trace/tracer.h"
#include "stoker/util/enum_names.h"

namespace stoker {

class BatchEngine;
class VerifiedSet;

// When records' checksums are checked.
enum class VerifyPolicy {
  kAlways,  // every read
  kOnce,    // the first read of each record in this loader (later epochs trust the mmap)
  kOff,     // never (`stoker verify` still checks everything)
};

inline constexpr auto kVerifyPolicyNames =
    enum_names<VerifyPolicy>({{VerifyPolicy::kAlways, "always"},
                              {VerifyPolicy::kOnce, "once"},
                              {VerifyPolicy::kOff, "off"}});

// "always", "once" or "off".
Result<VerifyPolicy> parse_verify_policy(const std::string& name);
// The inverse of parse_verify_policy.
std::string to_string(VerifyPolicy policy);

// What a bad sample does: kRaise fails its batch, kSkip drops and counts it.
enum class ErrorPolicy { kRaise, kSkip };

inline constexpr auto kErrorPolicyNames =
    enum_names<ErrorPolicy>({{ErrorPolicy::kRaise, "raise"}, {ErrorPolicy::kSkip, "skip"}});

// Limits on options (beyond them a machine of this kind cannot help).
inline constexpr int kMaxWorkers = 1024;
inline constexpr int kMaxPrefetch = 4096;
// Epochs are numbered [0, kMaxEpoch]: the engine plans epoch + 1 ahead, which stays an int64.
inline constexpr int64_t kMaxEpoch = int64_t{1} << 62;
// LoaderOptions::workers: tune the active workers (and an auto prefetch depth) while the
// consumer takes batches (worker_tuner.h), within LoaderOptions::tune's budgets.
inline constexpr int kAutoTuneWorkers = -2;

// The budgets and start of a tuned loader (workers == kAutoTuneWorkers).
struct TuneBudget {
  int max_workers = 0;    // the CPU budget: the most workers; 0 = machine's cores
  int start_workers = 0;  // tried first; 0 = auto_workers() (within max_workers)
  // The memory budget of an auto prefetch (-1): batches in flight take at most this many bytes
  // (but the depth is never below auto_prefetch's). A prefetch set by hand is not tuned.
  size_t max_prefetch_bytes = size_t{256} << 20;
};

struct LoaderOptions {
  int64_t batch_size = 256;
  // Threads building batches; 0 = inline on the consumer; -1 = auto (auto_workers);
  // kAutoTuneWorkers = tuned online (tune).
  int workers = -1;
  // Batches built ahead of the consumer, >= 1; -1 = auto (auto_prefetch). A deeper window
  // lets workers sleep longer between wake-ups.
  int prefetch = -1;
  uint64_t seed = 0;
  bool shuffle = true;
  LastBatch last_batch = LastBatch::kShort;  // the epoch's tail: short, dropped or padded
  int rank = 0;
  int world_size = 1;
  VerifyPolicy verify = VerifyPolicy::kOnce;   // when record checksums are checked
  ErrorPolicy on_error = ErrorPolicy::kRaise;  // kSkip drops and counts bad samples
  std::vector<FieldRequest> fields;            // empty: every fixed field as stored
  // Receives the workers' and the consumer's "pipeline" spans (docs/ARCHITECTURE.md, trace/);
  // null: not traced. Borrowed: must outlive the loader.
  Tracer* tracer = nullptr;
  TuneBudget tune;  // with workers == kAutoTuneWorkers
};

// Where a loader is in its sequence: enough to continue it exactly, with any world size.
struct LoaderState {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t position = 0;  // global samples of `epoch` consumed by all ranks together
};

// Time and counts per stage, summed over workers and batches. The atomics are written by the
// workers; epoch_start_wait_ns by the consumer thread only (read it from that thread).
struct PipelineStats {
  // Resolving records to their bytes and verifying the checksums due (a record that is not
  // checked is first read by its transform, so its cache misses count there).
  std::atomic<int64_t> read_ns{0};
  std::atomic<int64_t> transform_ns{0};  // the fields' transforms, into the batch buffer
  std::atomic<int64_t> busy_ns{0};       // workers' time building pieces, in total
  std::atomic<int64_t> wait_ns{0};       // consumer blocked for a batch not ready
  std::atomic<int64_t> batches{0};       // built (the next epoch's first ones included)
  std::atomic<int64_t> samples{0};       // built
  std::atomic<int64_t> skipped{0};       // bad samples dropped from the batches delivered
  // The consumer's wait for the first batch of each epoch it started, in order.
  std::vector<int64_t> epoch_start_wait_ns;
};

// One field of a batch: a C-contiguous array in a pooled buffer.
struct HostField {
  std::string name;
  DType dtype = DType::kUint8;
  std::vector<int64_t> shape;    // [batch size, sample shape...]
  std::vector<int64_t> strides;  // in elements, C-contiguous
  void* data = nullptr;
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
    // for a batch that failed (naming shard and record) under the raise policy.
    bool next(HostBatch& out);
    // What next_for() found.
    enum class Next { kBatch, kEnd, kTimedOut };
    // As next(), but waits at most `timeout` for a batch still being built. kTimedOut leaves
    // the epoch and `out` as they were, so a caller can check for an interruption (Ctrl-C in
    // Python) between waits and call again. With workers == 0 the batch is built inline and
    // this never times out.
    Next next_for(HostBatch& out, std::chrono::nanoseconds timeout);
    // Batches in this epoch from where it started.
    int64_t size() const;

   private:
    friend class LoaderCore;
    explicit Epoch(LoaderCore* loader) : loader_(loader) {}
    // Hands `buffer` (a batch, or nullptr after the last) out as `out`; throws for a failed one.
    bool deliver(std::shared_ptr<BatchBuffer> buffer, HostBatch& out);
    LoaderCore* loader_;
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
  // loader is live or e < 0. The workers build the next epoch's first batches while this one
  // ends.
  Epoch epoch(int64_t e);
  // Batches per epoch on this rank (from the epoch start).
  int64_t batches_per_epoch() const;
  // Where the loader is: the epoch of the last batch delivered and the global position after it
  // (or the next epoch at position 0 once an epoch is complete).
  LoaderState state() const { return state_; }
  // Continue from `state` (saved by any loader over the same dataset, any world size). Throws
  // Error (kInvalidArgument) if the seed differs, a number is negative, or an Epoch is live.
  void restore(const LoaderState& state);

  // Options with auto values resolved. A tuned loader's workers and prefetch are the most it
  // may use (its pool's size); tuning() says what it uses.
  const LoaderOptions& options() const { return options_; }
  // A tuned loader's (workers == kAutoTuneWorkers) choice so far: settled, or the setting in use
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
  // Sets the engine's active workers and window to the tuner's.
  void apply_tuning();
  // A batch was delivered: feeds the tuner, if any and not settled, and applies its change.
  void observe_batch();

  std::unique_ptr<WorkerTuner> tuner_;  // a tuned loader's
  LoaderState state_;
  bool epoch_live_ = false;
  int64_t epoch_batches_ = 0;  // of the live epoch
};

// Worker threads for `workers` = -1: one per hardware thread beyond the consumer's, at least 1.
int auto_workers();
// The prefetch depth "auto" picks for batches of `batch_bytes`: as many as fit in 16 MiB,
// at least 4 and at most 64. Small batches get a deep window because a window-full worker
// sleeps until half of it is free, and each wake-up costs the consumer a futex call.
int auto_prefetch(size_t batch_bytes);

}  // namespace stoker
