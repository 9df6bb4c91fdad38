#pragma once
// BatchEngine: builds the batches of one EpochPlan with a fixed pool of worker threads and hands
// them out strictly in order (DESIGN.md contracts 1, 5, 6). At most `prefetch` batches are in
// flight (assigned to a worker but not yet taken by the consumer), so memory stays bounded
// whatever the dataset size. Each batch carries its Status: a record that fails its checksum
// makes its batch fail (naming shard and record) or, with skip_errors, is dropped and counted.
// With workers == 0 batches are built inline by next() on the consumer's thread. The batch
// contents depend only on the plan, never on the worker count or timing.
//
// Workers that find the window full sleep until half of it (at least one batch) is free again:
// the consumer wakes them once per prefetch/2 batches, not once per batch, and wakes no more
// workers than there are free slots, because waking a sleeping thread costs ~20 µs on a VM
// (temporary timing of notify_all in next() during `stoker bench train`: 938 wake-ups were
// 0.018-0.022 s of a 0.7 s epoch).
//
// Thread-safety: next() is for one consumer thread; the destructor cancels workers (even ones
// waiting for the consumer) and joins them.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "stoker/pipeline/batch_buffer.h"
#include "stoker/pipeline/batch_layout.h"
#include "stoker/pipeline/sampler.h"
#include "stoker/pipeline/verified_set.h"
#include "stoker/store/dataset.h"

namespace stoker {

// When records' checksums are checked.
enum class VerifyPolicy {
  kAlways,  // every read
  kOnce,    // the first read of each record in this loader (later epochs trust the mmap)
  kOff,     // never (`stoker verify` still checks everything)
};

// "always", "once" or "off".
Result<VerifyPolicy> parse_verify_policy(const std::string& name);

struct EngineOptions {
  int workers = 2;   // worker threads; 0 builds batches inline
  int prefetch = 4;  // batches in flight, >= 1
  VerifyPolicy verify = VerifyPolicy::kAlways;
  bool skip_errors = false;  // drop and count bad records instead of failing the batch
};

// Time and counts per stage, summed over workers and batches. Thread-safe (atomics).
struct PipelineStats {
  // Resolving records to their bytes and verifying the checksums due (a record that is not
  // checked is first read during the gather, so its cache misses count there).
  std::atomic<int64_t> read_ns{0};
  std::atomic<int64_t> transform_ns{0};  // gathering fields into the batch buffer
  std::atomic<int64_t> wait_ns{0};       // consumer blocked in next() for a batch not ready
  std::atomic<int64_t> batches{0};
  std::atomic<int64_t> samples{0};
  std::atomic<int64_t> skipped{0};
};

class BatchEngine {
 public:
  // `layout` is copied: workers never reach into the caller. `verified` (records of `dataset`)
  // is required for VerifyPolicy::kOnce. Starts the workers.
  BatchEngine(std::shared_ptr<const Dataset> dataset, const BatchLayout& layout,
              std::shared_ptr<BufferPool> pool, EpochPlan plan, EngineOptions options,
              std::shared_ptr<PipelineStats> stats,
              std::shared_ptr<VerifiedSet> verified = nullptr);
  BatchEngine(const BatchEngine&) = delete;
  BatchEngine& operator=(const BatchEngine&) = delete;
  ~BatchEngine();

  // The next batch in plan order, or nullptr after the last. Blocks while it is being built.
  std::shared_ptr<BatchBuffer> next();
  const EpochPlan& plan() const { return plan_; }

 private:
  // A builder's reusable working memory, so that building a batch allocates nothing.
  struct Scratch {
    std::vector<const uint8_t*> records;  // the batch's good records, in order
    std::vector<uint8_t*> field_dst;      // the buffer's block per field
  };

  // Free slots in the window at which the consumer wakes sleeping workers.
  int64_t wake_room() const { return std::max(1, options_.prefetch / 2); }
  void work();
  // Cancels the workers (even ones waiting for the consumer) and joins them. Idempotent.
  void stop();
  // Builds batch b into `buffer`; never throws.
  void build(int64_t b, BatchBuffer& buffer, Scratch& scratch);

  const std::shared_ptr<const Dataset> dataset_;
  const BatchLayout layout_;
  const std::shared_ptr<BufferPool> pool_;
  const EpochPlan plan_;
  const EngineOptions options_;
  const std::shared_ptr<PipelineStats> stats_;
  const std::shared_ptr<VerifiedSet> verified_;
  Scratch inline_scratch_;  // for workers == 0

  std::mutex mutex_;
  std::condition_variable work_cv_;                        // workers wait for room in the window
  std::condition_variable ready_cv_;                       // the consumer waits for its batch
  int64_t next_assign_ = 0;                                // guarded by mutex_
  int64_t next_deliver_ = 0;                               // guarded by mutex_
  std::map<int64_t, std::shared_ptr<BatchBuffer>> ready_;  // guarded by mutex_
  std::atomic<bool> cancelled_{false};
  std::vector<std::thread> workers_;
};

}  // namespace stoker
