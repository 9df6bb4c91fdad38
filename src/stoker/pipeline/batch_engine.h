#pragma once
// BatchEngine: the loader's persistent worker pool. Workers start once and live across epochs;
// they build batches straight into pooled buffers and the consumer takes them strictly in plan
// order (docs/DESIGN.md contracts 1, 4, 5, 6). Private to the pipeline: LoaderCore owns one.
//
// Work unit: a piece of a batch. Each batch is split into as many contiguous pieces as there
// are workers, so heavy samples (decode, augmentation) keep every worker busy whatever the
// prefetch depth. The last worker to finish a piece of a batch finalises it (failures, skip
// compaction, the batch transform: batch_transform.h) and publishes it.
//
// Window: at most `prefetch` batches are open (some piece assigned) and not yet taken by the
// consumer, so memory stays bounded whatever the dataset size. Workers that find no piece to
// take sleep until half of the window (at least one batch) is free again: the consumer wakes
// them once per prefetch/2 batches, not once per batch, because waking a sleeping thread costs
// ~20 µs on a VM (docs/BENCHMARKS.md).
//
// Epochs: start(e, position) makes the engine deliver plan(e, position) and build
// plan(e + 1, 0) behind it, so the first batches of the next epoch are ready when the consumer
// finishes this one and evaluates (no refill bubble). If the next start() asks for exactly that
// plan, the work is kept; otherwise (a restore, a jump) it is dropped. start(plan) delivers a
// given plan (an explicit one: EpochPlan::of_batches) with nothing behind it, dropping the work
// in flight.
//
// Limits: the pool is started with `workers` threads and sized for a window of `prefetch`; while
// it runs the consumer may lower and raise the active workers (set_active_workers: worker i
// takes pieces only while i < the limit, the others sleep on their own condition variable, so
// the hot path's wake-ups reach only active workers) and the window (set_window, within
// [1, prefetch]). Batches are still split into `workers` pieces, so their contents never
// depend on these limits; the worker tuner (worker_tuner.h) moves them.
//
// Shards: a piece pins its records' shards (Dataset::pin: a remote dataset's are fetched) before
// it reads them and lets go after its transforms; a cancelled piece cancels its fetch.
//
// Errors: a sample that fails its checksum or transform fails its batch with a Status naming
// dataset, shard and record (the first failing sample in batch order, whatever the worker
// count), or, with skip_errors, is dropped and counted. A shard that cannot be fetched, or that
// changed under the run, fails its batch under either policy. Batch contents depend only on the
// plan, never on the worker count or timing. With workers == 0 next() builds batches inline.
//
// Thread-safety: start() and next() are for one consumer thread; the destructor cancels the
// workers (even ones mid-piece) and joins them.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "stoker/pipeline/batch_buffer.h"
#include "stoker/pipeline/batch_layout.h"
#include "stoker/pipeline/loader_settings.h"
#include "stoker/pipeline/pipeline_stats.h"
#include "stoker/pipeline/sampler.h"
#include "stoker/pipeline/verified_set.h"
#include "stoker/store/dataset.h"
#include "stoker/trace/tracer.h"
#include "stoker/util/thread_annotations.h"

namespace stoker {

// Resolved from LoaderSettings by LoaderCore.
struct EngineOptions {
  int workers = 0;   // worker threads; 0 builds batches inline
  int prefetch = 1;  // batches in flight, >= 1
  VerifyPolicy verify = VerifyPolicy::kAlways;
  bool skip_errors = false;  // drop and count bad records instead of failing the batch
  uint64_t seed = 0;         // the loader's seed, for the samples' random streams
  // Receives spans (category "pipeline"): a worker's "piece" with its "fetch" (a dataset that
  // needs pins only: waiting for its shards), "read", "transform" and, for a batch's last
  // piece, "finalize"; the consumer's "wait" for a batch not ready. And
  // counters: the consumer's "ready_batches" (built and not yet taken, after each batch it
  // takes from the workers) and "active_workers" (when set_active_workers changes it). Null:
  // none. Must outlive the engine.
  Tracer* tracer = nullptr;
};

class BatchEngine {
 public:
  // Precondition (asserted; LoaderCore checks its options): workers in [0, kMaxWorkers],
  // prefetch in [1, kMaxPrefetch], `verified` (records of `dataset`) given with kOnce. Starts
  // the workers, which wait for start().
  BatchEngine(std::shared_ptr<const Dataset> dataset, BatchLayout layout,
              std::shared_ptr<BufferPool> pool, Sampler sampler, EngineOptions options,
              std::shared_ptr<PipelineStats> stats, std::shared_ptr<VerifiedSet> verified);
  BatchEngine(const BatchEngine&) = delete;
  BatchEngine& operator=(const BatchEngine&) = delete;
  ~BatchEngine();

  // Deliver plan(epoch, position) next, and build plan(epoch + 1, 0) behind it. Throws Error
  // (kCancelled) and changes nothing if the thread's cancellation in scope (cancel_scope.h)
  // ends the plans' build.
  void start(int64_t epoch, int64_t position) STOKER_EXCLUDES(mutex_);
  // The same, from the two epochs' samples (Sampler::samples of this engine's sampler), where
  // the caller computed them already: each order is then computed once.
  void start(int64_t epoch, int64_t position, std::vector<int64_t> samples,
             std::vector<int64_t> next_samples) STOKER_EXCLUDES(mutex_);
  // Deliver `plan` next, and nothing behind it.
  void start(EpochPlan plan) STOKER_EXCLUDES(mutex_);
  // The next batch of the started plan, or nullptr after its last. Blocks while it is built.
  std::shared_ptr<BatchBuffer> next() STOKER_EXCLUDES(mutex_);
  // As next(), but waits at most until `deadline` for a batch still being built: then it sets
  // *timed_out and returns nullptr, and a later call takes up the same batch. With workers == 0
  // it builds the batch inline, whatever the deadline, unless `interrupted` (may be empty; polled
  // where a cancel is: per sample, every ~50 ms of a fetch) turns true: then the build ends there
  // as a time-out does, and a later call builds the same batch again.
  std::shared_ptr<BatchBuffer> next_until(std::chrono::steady_clock::time_point deadline,
                                          bool* timed_out,
                                          const std::function<bool()>& interrupted = {})
      STOKER_EXCLUDES(mutex_);
  // Batches of the started plan.
  int64_t num_batches() const STOKER_EXCLUDES(mutex_);
  // Whether next() builds each batch in the caller's thread (no workers): it never waits.
  bool builds_inline() const { return options_.workers == 0; }
  // Workers that take pieces from now on: those with index < `workers`, clamped to
  // [1, options.workers]. Pieces already taken are finished. No effect with workers == 0.
  void set_active_workers(int workers) STOKER_EXCLUDES(mutex_);
  // Batches built ahead of the consumer from now on, clamped to [1, options.prefetch]; batches
  // already opened beyond a lowered window are finished and delivered.
  void set_window(int prefetch) STOKER_EXCLUDES(mutex_);

 private:
  // A plan and the sequence number of its first batch (numbers run on across plans).
  struct Scheduled {
    EpochPlan plan;
    int64_t first_seq;
  };
  // A worker's assignment: samples [begin, end) of batch `seq`.
  struct Piece {
    int64_t seq = 0;
    int piece = 0;
    EpochPlan plan;
    int64_t batch = 0;
    uint64_t generation = 0;
    std::shared_ptr<BatchBuffer> buffer;
  };
  // A builder's reusable working memory, so that building allocates nothing.
  struct Scratch {
    std::vector<ByteSpan> records;
    std::vector<ViewedRecord> viewed;
    std::vector<int64_t> parts;  // Dataset::part of each sample
    std::vector<uint8_t*> field_dst;
    std::vector<int64_t*> field_shapes;
  };

  // Worker `index`'s loop.
  void work(int index) STOKER_EXCLUDES(mutex_);
  // next() and next_until(): waits until `deadline` if set, else for as long as it takes.
  std::shared_ptr<BatchBuffer> take_next(
      const std::optional<std::chrono::steady_clock::time_point>& deadline, bool* timed_out,
      const std::function<bool()>& interrupted) STOKER_EXCLUDES(mutex_);

  // Drops everything in flight and schedules `plan` alone.
  void replace_plans(EpochPlan plan) STOKER_REQUIRES(mutex_);
  // Cancels the workers and joins them. Idempotent.
  void stop() STOKER_EXCLUDES(mutex_);
  // Whether a piece can be taken now, and taking it: `buffer` (not null when no batch is open)
  // opens the next batch; otherwise it is dropped (back to the pool).
  bool piece_available() const STOKER_REQUIRES(mutex_);
  Piece take_piece(std::shared_ptr<BatchBuffer> buffer) STOKER_REQUIRES(mutex_);
  // A buffer from the pool (recycled or allocated); if the allocation fails, an empty buffer
  // whose status fails its batch (the worker lives on).
  std::shared_ptr<BatchBuffer> new_buffer();
  // The plan holding sequence number `seq`.
  const Scheduled& scheduled(int64_t seq) const STOKER_REQUIRES(mutex_);
  int64_t end_seq() const STOKER_REQUIRES(mutex_);
  // Fresh working state (failures, piece statuses and counters) for a batch about to be built.
  void clear_working_state(BatchBuffer& buffer) const;
  // Builds samples of `piece` into its buffer; returns false if cancelled (or `interrupted`,
  // which may be empty) meanwhile.
  bool build_piece(const Piece& piece, Scratch& scratch,
                   const std::function<bool()>& interrupted = {});
  // The first of records[0..n) whose shard a guarded read found shrunk (mapped_read_guard.h),
  // as an error naming shard and record; ok if none (one atomic load while no file shrank).
  Status changed_shard_error(const int64_t* records, size_t n) const;
  // Settles a built batch: status of its first failing sample, or compaction under skip; then
  // the variable fields' largest shapes (and padding, variable_samples.h); then the layout's
  // batch transform, if any, on what is left.
  void finalize(BatchBuffer& buffer) const;
  // Adds a batch handed to the consumer to the stats: its skipped samples, its pieces'
  // SampleCounters and, for a mixture, each part's samples (not the next epoch's batches built
  // ahead).
  void count_delivered(const BatchBuffer& buffer) const STOKER_REQUIRES(mutex_);
  void arrange_variable(BatchBuffer& buffer) const;
  // Records a "pipeline" span on options_.tracer, if any.
  void trace_span(const char* name, int64_t start_ns, int64_t end_ns) const;
  // Samples [begin, end) of piece `p` of a batch of `n`.
  std::pair<size_t, size_t> piece_range(size_t n, int p) const;
  bool cancelled(uint64_t generation) const {
    return generation_.load(std::memory_order_relaxed) != generation;
  }

  const std::shared_ptr<const Dataset> dataset_;
  const BatchLayout layout_;
  const std::shared_ptr<BufferPool> pool_;
  const Sampler sampler_;
  const EngineOptions options_;
  const int pieces_;  // per batch
  const std::shared_ptr<PipelineStats> stats_;
  const std::shared_ptr<VerifiedSet> verified_;
  Scratch inline_scratch_;  // for workers == 0
  // With workers == 0, the consumer's: the batch whose inline build was interrupted, built
  // again by the next call (dropped if the plans were replaced meanwhile).
  std::optional<Piece> inline_pending_;
  // The consumer's: time waited for the epoch's first batch in calls that timed out.
  int64_t start_wait_ns_ = 0;

  mutable Mutex mutex_;
  std::condition_variable work_cv_;   // active workers wait for a piece to take
  std::condition_variable idle_cv_;   // workers beyond active_ wait to become active
  std::condition_variable ready_cv_;  // the consumer waits for its batch
  // The plan being delivered and the one behind it.
  std::deque<Scheduled> plans_ STOKER_GUARDED_BY(mutex_);
  int64_t next_deliver_ STOKER_GUARDED_BY(mutex_) = 0;  // sequence number the consumer takes next
  int64_t next_open_ STOKER_GUARDED_BY(mutex_) = 0;     // of the next batch to open
  // The last opened batch while it still has pieces to hand out.
  std::shared_ptr<BatchBuffer> opening_ STOKER_GUARDED_BY(mutex_);
  int next_piece_ STOKER_GUARDED_BY(mutex_) = 0;                                     // of opening_
  std::map<int64_t, int> pieces_left_ STOKER_GUARDED_BY(mutex_);                     // by seq
  std::map<int64_t, std::shared_ptr<BatchBuffer>> ready_ STOKER_GUARDED_BY(mutex_);  // by seq
  bool stopping_ STOKER_GUARDED_BY(mutex_) = false;
  int sleeping_ STOKER_GUARDED_BY(mutex_) = 0;  // workers waiting for a piece
  // A worker allocates the next batch's buffer outside the lock; no other batch opens meanwhile
  // (the pool's bound on buffers stays what it is with the allocation under the lock).
  bool allocating_ STOKER_GUARDED_BY(mutex_) = false;
  int active_ STOKER_GUARDED_BY(mutex_) = 0;  // workers with a lower index take pieces
  int window_ STOKER_GUARDED_BY(mutex_) = 0;  // batches open and not yet delivered, at most
  // Bumped (under mutex_) when work in flight is dropped; workers compare it per sample.
  std::atomic<uint64_t> generation_{0};
  std::vector<std::thread> workers_;
};

}  // namespace stoker
