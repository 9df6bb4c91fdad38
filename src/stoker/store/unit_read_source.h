#pragma once
// UnitReadSource: the part every record source that reads files in place shares (an image
// folder, WebDataset tars): a unit (a manifest shard) is read into memory when a pin of it is
// asked for, on the asking thread (others asking for it wait), its records built by the derived
// class's read_unit (ShardReader::in_memory). It is let go when its last pin is, unless the
// loader's plan (advise, advance) uses it again within its lookahead. A derived class that
// reads ahead (set_units_ahead) is told, at each move of the plan, the units not in memory that
// the plan needs next, soonest first. A unit's bad records are marked bad in its reader
// (ShardReader::bad: the loader then fails them, whatever fields it reads), their reasons kept by
// global record index for record_error. With a unit pass (set_unit_pass), each unit read passes
// through it (e.g. store/import/transcode_cache.h: its images are then the transcoded ones), and
// what the pass notes is counted in stats() (ShardSourceStats::notes). A source whose units are
// views of memory it keeps for its life (a mapped token file's) may have them stay
// (set_units_stay): each is read once, kept, and pinned as a local dataset's shards are, with
// no lock and no hold. Thread-safe.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/store/shard_source.h"
#include "stoker/util/thread_annotations.h"

namespace stoker {

class UnitReadSource : public ShardSource, public std::enable_shared_from_this<UnitReadSource> {
 public:
  const Manifest& manifest() const override { return manifest_; }
  const std::vector<const ShardReader*>& readers() const override { return readers_; }
  bool needs_pins() const override { return true; }
  // False where units stay: the plan changes nothing.
  bool follows_plan() const override { return !units_stay_; }
  Result<ShardPin> acquire(int unit, const std::function<bool()>& cancelled) override;
  // Two or more units: those in memory pinned under one lock and held by one hold (a batch's
  // units, most of them at hand: one lock and one hold, not one each), the others as acquire()
  // pins them; fewer, as acquire() pins them.
  Result<ShardPins> acquire_all(const std::vector<int>& units,
                                const std::function<bool()>& cancelled,
                                const std::function<bool()>& awaited) override;
  ShardSourceStats stats() const override;
  void advise(const ShardSchedule& schedule, int64_t lookahead) override;
  void advance(int64_t position) override;
  // What each unit read passes through: the records to serve for the unit read, and a one-line
  // note, where it has one, in `note` (left empty otherwise).
  using UnitPass = std::function<ShardReader(ShardReader unit, std::string& note)>;
  // Units read from now on pass through `pass` (empty: none, the default).
  void set_unit_pass(UnitPass pass);

 protected:
  UnitReadSource() = default;
  // Sets the manifest (its shards are the units) once, before any pin is asked for.
  void set_manifest(Manifest manifest);
  // Units read from now on are never let go, and their pins hold nothing: for units that are
  // views of memory the source keeps for its life, small to keep. Called after set_manifest,
  // before any pin is asked for.
  void set_units_stay();
  // Unit u's records, with the reasons of its bad records by global index in `bad`; an error
  // when the unit cannot be read at all (acquire's); kCancelled when acquire's `cancelled`
  // turns true while its files are downloaded (InPlaceFiles::open).
  virtual Result<ShardReader> read_unit(int u, std::map<uint64_t, std::string>& bad,
                                        const std::function<bool()>& cancelled) const = 0;
  // The reason record `global` was found bad when read, or "" if it was not.
  std::string bad_reason(uint64_t global) const;
  // How many units units_ahead names (0, the default: it is not called).
  void set_units_ahead(int count);
  // The `count` units not in memory that the plan needs next, soonest first; called under the
  // source's lock, so it must not call back into it.
  virtual void units_ahead(const std::vector<int>& /*units*/) {}
  // Told at each move of the plan when each unit is next read into memory
  // (ShardSchedule::next_read at `position`), e.g. for a cache of the files read; called under
  // the source's lock, so it must not call back into it.
  virtual void reads_planned(std::function<int64_t(int unit)> /*next_read*/, int64_t /*position*/) {
  }

 private:
  struct Unit {
    int pins = 0;
    bool reading = false;
    std::unique_ptr<ShardReader> reader;
    size_t idle_at = 0;  // its place in idle_, while it is there
  };
  void release(int u);
  // release() of each of `units`, under one lock.
  void release_all(const std::vector<int>& units);
  // One pin of unit u let go: when it was the last, the unit idles or is let go (the caller
  // then names the units ahead); whether it was.
  bool unpin(int u) STOKER_REQUIRES(mutex_);
  // Unit u into idle_, or out of it (in constant time: a token file keeps hundreds).
  void add_idle(int u) STOKER_REQUIRES(mutex_);
  void remove_idle(int u) STOKER_REQUIRES(mutex_);
  // Whether unpinned unit u is kept: the plan uses it within the lookahead.
  bool wanted(int u) const STOKER_REQUIRES(mutex_);
  // Lets go of the unpinned units the plan no longer wants, and names those it needs next
  // (units_ahead).
  void sweep() STOKER_REQUIRES(mutex_);
  // Names the units the plan needs next (units_ahead), where the source asked for them.
  void name_units_ahead() STOKER_REQUIRES(mutex_);
  // Tells reads_planned the plan at the position now.
  void tell_reads() STOKER_REQUIRES(mutex_);

  Manifest manifest_;
  std::vector<uint64_t> firsts_;  // unit u's first record's global index
  UnitPass unit_pass_ STOKER_GUARDED_BY(mutex_);
  std::vector<const ShardReader*> readers_;  // entry u set while unit u is read
  // With units that stay (set before any pin, then read only): unit u read and kept, stored
  // after readers_[u] is set, so a pin that sees it may read that entry without the lock.
  bool units_stay_ = false;
  std::unique_ptr<std::atomic<bool>[]> stayed_;

  mutable Mutex mutex_;
  std::condition_variable read_;  // a unit's read ended
  std::vector<Unit> units_ STOKER_GUARDED_BY(mutex_);
  std::vector<int> idle_ STOKER_GUARDED_BY(mutex_);  // units read and not pinned, all wanted
  // The first position at which a unit of idle_ may stop being wanted (ShardSchedule::use_ends):
  // a move of the plan before it lets none go, so it sweeps nothing (a release checks its unit
  // alone). Many units used all through an epoch (a shuffled token file's) are then not checked
  // at each batch.
  int64_t sweep_at_ STOKER_GUARDED_BY(mutex_) = 0;
  std::map<uint64_t, std::string> bad_ STOKER_GUARDED_BY(mutex_);  // global index -> reason
  // Shared with the functions given to reads_planned; set (advised) by advise.
  std::shared_ptr<const ShardSchedule> schedule_ STOKER_GUARDED_BY(mutex_);
  int64_t lookahead_ STOKER_GUARDED_BY(mutex_) = 0;
  int64_t position_ STOKER_GUARDED_BY(mutex_) = 0;
  int units_ahead_ STOKER_GUARDED_BY(mutex_) = 0;
  uint64_t read_bytes_ STOKER_GUARDED_BY(mutex_) = 0;
  int64_t wait_ns_ STOKER_GUARDED_BY(mutex_) = 0;
  int64_t notes_ STOKER_GUARDED_BY(mutex_) = 0;  // the unit pass's notes
  std::string last_note_ STOKER_GUARDED_BY(mutex_);
};

}  // namespace stoker
