#pragma once
// PipelineStats: a loader's time and counts per stage, summed over workers and batches
// (LoaderCore::stats()). Written by the engine's workers, read by anyone.

#include <atomic>
#include <cstdint>
#include <vector>

namespace stoker {

// Time and counts per stage, summed over workers and batches. The atomics are written by the
// workers; epoch_start_wait_ns by the consumer thread only (read it from that thread).
struct PipelineStats {
  // Waiting for the shards of the records about to be read: a remote dataset's fetches
  // (shard_source.h). 0 for a local dataset, whose shards are always mapped.
  std::atomic<int64_t> fetch_ns{0};
  // Resolving records to their bytes and verifying the checksums due (a record that is not
  // checked is first read by its transform, so its cache misses count there).
  std::atomic<int64_t> read_ns{0};
  std::atomic<int64_t> transform_ns{0};  // the fields' transforms, into the batch buffer
  std::atomic<int64_t> busy_ns{0};       // workers' time building pieces, in total
  std::atomic<int64_t> wait_ns{0};       // consumer blocked for a batch not ready
  std::atomic<int64_t> batches{0};       // built (the next epoch's first ones included)
  std::atomic<int64_t> samples{0};       // built
  std::atomic<int64_t> skipped{0};       // bad samples dropped from the batches delivered
  // Video frames decoded, and those the clips hold (SampleCounters), of the batches delivered
  // (as skipped): their ratio is what decoding from keyframes costs per frame delivered.
  std::atomic<int64_t> video_frames_decoded{0};
  std::atomic<int64_t> video_frames_delivered{0};
  // The consumer's wait for the first batch of each epoch it started, in order.
  std::vector<int64_t> epoch_start_wait_ns;
  // A mixture's (a dataset of several parts): the samples of each part in the batches delivered,
  // padding and skipped samples not counted; sized once, before the engine starts.
  std::vector<std::atomic<int64_t>> part_samples;
};

}  // namespace stoker
