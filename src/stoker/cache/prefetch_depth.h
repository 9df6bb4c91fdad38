#pragma once
// How far ahead a remote dataset's downloaders fetch (docs/REMOTE-DESIGN.md section 3): far
// enough that a shard's download, at the measured bandwidth, ends before the loader reaches
// it, and no farther, because every shard fetched early holds cache room that a cache smaller
// than the dataset needs for the shards used next (bench/remote/cache_simulation.cc). And how
// many downloads run at once: enough streams to carry what the loader reads.
//
// RateMeter and PrefetchMeter are not thread-safe (their owner locks); prefetch_depth and
// download_streams are pure. Used by remote shards (remote_shard_source.h) and by remote files
// read in place (access/remote_files.h), whose units are files or row groups.

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

// The steady clock's time in nanoseconds: the clock PrefetchMeter's owners give it.
int64_t steady_now_ns();

// What prefetch_depth and download_streams are given as measured: one download's bandwidth
// (each download's bytes over its time) and the reader's pace (its position's moves over spans
// of at least kPaceSpanNs: move by move it is too jittery). A position counts records, or
// units read, as its owner chooses; the pace is in the same count per second.
class PrefetchMeter {
 public:
  static constexpr int64_t kPaceSpanNs = 100'000'000;
  // The pace's next sample starts at `position`, at `now_ns` (a new plan, from its start).
  void restart(int64_t position, int64_t now_ns);
  // The reader is at `position` at `now_ns`; the first call after none starts the pace's span.
  void moved(int64_t position, int64_t now_ns);
  // A download of `bytes` took `seconds`.
  void downloaded(double bytes, double seconds) { bandwidth_.add(bytes, seconds); }
  double bytes_per_s() const { return bandwidth_.per_second(); }
  double pace() const { return pace_.per_second(); }
  // These figures for units of `unit_bytes` and `unit_records` (in the position's count) on
  // average, with at most `max_streams` downloads at once.
  PrefetchInputs inputs(double unit_bytes, double unit_records, int max_streams) const;

 private:
  RateMeter bandwidth_;  // bytes/s of one download
  RateMeter pace_;       // the position's moves per second
  bool started_ = false;
  int64_t since_ns_ = 0;  // where the pace's next sample starts
  int64_t since_position_ = 0;
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
