#pragma once
// How far ahead a remote dataset's downloaders fetch (docs/REMOTE-DESIGN.md section 3): far
// enough that a shard's download, at the measured bandwidth, ends before the loader reaches
// it, and no farther, because every shard fetched early holds cache room that a cache smaller
// than the dataset needs for the shards used next (bench/remote/cache_simulation.cc). And how
// many downloads run at once: enough streams to carry what the loader reads.
//
// RateMeter is not thread-safe (its owner locks); prefetch_depth and download_streams are pure.

#include <cstdint>

namespace stoker {

// A smoothed rate (amount per second) from samples of (amount, seconds): each sample's rate
// weighs `weight`, the past the rest. Zero until the first sample.
class RateMeter {
 public:
  explicit RateMeter(double weight = 0.3) : weight_(weight) {}
  void add(double amount, double seconds);
  double per_second() const { return rate_; }

 private:
  double weight_;
  double rate_ = 0;
};

struct PrefetchInputs {
  double shard_bytes = 0;         // the mean shard's bytes
  double shard_records = 0;       // the mean shard's records
  double stream_bytes_per_s = 0;  // one download's measured bandwidth; 0: not measured yet
  double records_per_s = 0;       // the loader's measured pace; 0: not measured yet
  int unmeasured_depth = 4;       // the depth until both are measured
  int max_depth = 64;
  int min_streams = 2;  // downloads at once, until measured and at least
  int max_streams = 8;
};

// The shards to fetch past the loader's lookahead: 1 + 1.5x the ratio of one shard's download
// time to the time the loader takes to read one, within [1, max_depth]. A loader starved by
// the network reads at the pace the downloads set, so the depth then settles near 1.5x the
// number of downloads in flight, enough to keep them all busy.
int prefetch_depth(const PrefetchInputs& in);

// The downloads to run at once: streams that, at one download's measured bandwidth, carry 1.5x
// the bytes the loader reads at its measured pace, within [min_streams, max_streams]. A loader
// starved by the network reads at the pace the downloads set, so each measurement asks for
// 1.5x the streams in flight: their number grows until the loader is no longer starved, or the
// link is full (then one stream's bandwidth falls as streams are added: the maximum bounds it).
int download_streams(const PrefetchInputs& in);

// The most downloads ahead that a cache of `budget_bytes` holds beside the `floor_bytes` the
// loader needs at once (access/data_source.h's cache_floor), each up to `largest_shard_bytes`,
// from 1 to `max_streams`: the room a download takes until it ends is never the room a shard
// needed now must have.
int streams_that_fit(uint64_t budget_bytes, uint64_t floor_bytes, uint64_t largest_shard_bytes,
                     int max_streams);

}  // namespace stoker
