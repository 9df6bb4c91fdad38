#include "stoker/store/unit_read_source.h"

#include <algorithm>
#include <chrono>

namespace stoker {

void UnitReadSource::set_manifest(Manifest manifest) {
  manifest_ = std::move(manifest);
  readers_.assign(manifest_.shards.size(), nullptr);
  uint64_t first = 0;
  for (const ShardInfo& unit : manifest_.shards) {
    firsts_.push_back(first);
    first += unit.records;
  }
  MutexLock lock(mutex_);
  units_.resize(manifest_.shards.size());
}

void UnitReadSource::set_units_stay() {
  units_stay_ = true;
  stayed_ = std::make_unique<std::atomic<bool>[]>(manifest_.shards.size());
}

Result<ShardPin> UnitReadSource::acquire(int u, const std::function<bool()>& cancelled) {
  if (units_stay_ && stayed_[u].load(std::memory_order_acquire)) return ShardPin(u, nullptr);
  MutexLock lock(mutex_);
  // A unit in memory is pinned without a wait, so without the clock's two reads.
  const bool at_hand = units_[u].reader != nullptr;
  const auto start =
      at_hand ? std::chrono::steady_clock::time_point{} : std::chrono::steady_clock::now();
  lock.wait(read_, [&]() STOKER_REQUIRES(mutex_) { return !units_[u].reading; });
  if (!units_[u].reader) {
    units_[u].reading = true;
    const UnitPass pass = unit_pass_;
    lock.unlock();
    std::map<uint64_t, std::string> bad;
    Result<ShardReader> read = read_unit(u, bad, cancelled);
    std::string note;
    if (read.is_ok() && pass) read = pass(std::move(read).value(), note);
    lock.lock();
    if (!note.empty()) {
      ++notes_;
      last_note_ = std::move(note);
    }
    Unit& unit = units_[u];
    unit.reading = false;
    read_.notify_all();
    if (!read.is_ok()) return read.status();
    auto reader = std::make_unique<ShardReader>(std::move(read).value());
    std::vector<uint64_t> marked;  // the bad records' indices in the unit, in order
    for (const auto& entry : bad) marked.push_back(entry.first - firsts_[u]);
    reader->mark_bad(std::move(marked));
    read_bytes_ += reader->file_bytes();
    readers_[u] = reader.get();
    unit.reader = std::move(reader);
    bad_.merge(bad);
    if (units_stay_) stayed_[u].store(true, std::memory_order_release);
  } else if (!units_stay_ && units_[u].pins == 0) {
    remove_idle(u);
  }
  if (!at_hand)
    wait_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  if (units_stay_) return ShardPin(u, nullptr);  // it is never let go
  ++units_[u].pins;
  // The hold keeps the source alive; letting it go releases the pin (it deletes nothing).
  std::shared_ptr<void> hold(this, [self = shared_from_this(), u](void*) { self->release(u); });
  return ShardPin(u, std::move(hold));
}

Result<ShardPins> UnitReadSource::acquire_all(const std::vector<int>& units,
                                              const std::function<bool()>& cancelled,
                                              const std::function<bool()>& awaited) {
  if (units.size() < 2 || units_stay_) return ShardSource::acquire_all(units, cancelled, awaited);
  std::vector<int> at_hand;
  std::vector<size_t> missing;  // where in `units` those not in memory are (mostly none)
  {
    MutexLock lock(mutex_);
    for (size_t k = 0; k < units.size(); ++k) {
      const int u = units[k];
      if (!units_[u].reader) {
        missing.push_back(k);
        continue;
      }
      if (units_[u].pins == 0) remove_idle(u);
      ++units_[u].pins;
      at_hand.push_back(u);
    }
  }
  std::shared_ptr<void> hold;
  if (!at_hand.empty())
    hold = std::shared_ptr<void>(this, [self = shared_from_this(), at_hand = std::move(at_hand)](
                                           void*) { self->release_all(at_hand); });
  ShardPins pins;
  pins.reserve(units.size());
  for (size_t k = 0, m = 0; k < units.size(); ++k) {
    if (m < missing.size() && missing[m] == k) {
      ++m;
      STOKER_ASSIGN_OR_RETURN(ShardPin pin, acquire(units[k], cancelled));
      pins.push_back(std::move(pin));
    } else {
      pins.emplace_back(units[k], hold);
    }
  }
  return pins;
}

bool UnitReadSource::unpin(int u) {
  if (--units_[u].pins > 0) return false;
  if (wanted(u)) {  // the other idle units are wanted still: the position has not moved
    add_idle(u);
    sweep_at_ = std::min(sweep_at_, schedule_->use_ends(u, position_));
  } else {
    readers_[u] = nullptr;
    units_[u].reader.reset();
  }
  return true;
}

void UnitReadSource::release(int u) {
  MutexLock lock(mutex_);
  if (unpin(u)) name_units_ahead();
}

void UnitReadSource::release_all(const std::vector<int>& units) {
  MutexLock lock(mutex_);
  bool any = false;
  for (int u : units) any = unpin(u) || any;
  if (any) name_units_ahead();
}

bool UnitReadSource::wanted(int u) const {
  return schedule_ && schedule_->next_use(u, position_) <= position_ + lookahead_;
}

void UnitReadSource::sweep() {
  auto kept = std::partition(idle_.begin(), idle_.end(),
                             [&](int u) STOKER_REQUIRES(mutex_) { return wanted(u); });
  for (auto it = kept; it != idle_.end(); ++it) {
    readers_[*it] = nullptr;
    units_[*it].reader.reset();
  }
  idle_.erase(kept, idle_.end());
  for (size_t i = 0; i < idle_.size(); ++i) units_[idle_[i]].idle_at = i;
  sweep_at_ = ShardSchedule::kNever;
  if (schedule_)
    for (int u : idle_) sweep_at_ = std::min(sweep_at_, schedule_->use_ends(u, position_));
  name_units_ahead();
}

void UnitReadSource::add_idle(int u) {
  units_[u].idle_at = idle_.size();
  idle_.push_back(u);
}

void UnitReadSource::remove_idle(int u) {
  const size_t at = units_[u].idle_at;
  idle_[at] = idle_.back();
  units_[idle_[at]].idle_at = at;
  idle_.pop_back();
}

void UnitReadSource::name_units_ahead() {
  if (!schedule_ || units_ahead_ == 0) return;
  std::vector<std::pair<int64_t, int>> next;  // (next use, unit) of the units not in memory
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    if (units_[u].reader || units_[u].reading) continue;
    const int64_t use = schedule_->next_use(u, position_);
    if (use != ShardSchedule::kNever) next.emplace_back(use, u);
  }
  const size_t count = std::min(next.size(), static_cast<size_t>(units_ahead_));
  std::partial_sort(next.begin(), next.begin() + static_cast<ptrdiff_t>(count), next.end());
  std::vector<int> ahead;
  for (size_t i = 0; i < count; ++i) ahead.push_back(next[i].second);
  units_ahead(ahead);
}

void UnitReadSource::set_unit_pass(UnitPass pass) {
  MutexLock lock(mutex_);
  unit_pass_ = std::move(pass);
}

void UnitReadSource::set_units_ahead(int count) {
  MutexLock lock(mutex_);
  units_ahead_ = count;
}

void UnitReadSource::advise(const ShardSchedule& schedule, int64_t lookahead) {
  MutexLock lock(mutex_);
  schedule_ = std::make_shared<const ShardSchedule>(schedule);
  lookahead_ = lookahead;
  position_ = 0;
  tell_reads();
  sweep();
}

void UnitReadSource::advance(int64_t position) {
  MutexLock lock(mutex_);
  const bool back = position < position_;  // a unit kept may not be wanted from further back
  position_ = position;
  tell_reads();
  if (back || position_ >= sweep_at_ || units_ahead_ > 0) sweep();
}

void UnitReadSource::tell_reads() {
  reads_planned([schedule = schedule_,
                 position = position_](int u) { return schedule->next_read(u, position); },
                position_);
}

ShardSourceStats UnitReadSource::stats() const {
  MutexLock lock(mutex_);
  ShardSourceStats stats;
  stats.fetched_bytes = read_bytes_;
  stats.wait_ns = wait_ns_;
  stats.notes = notes_;
  stats.last_note = last_note_;
  return stats;
}

std::string UnitReadSource::bad_reason(uint64_t global) const {
  MutexLock lock(mutex_);
  auto bad = bad_.find(global);
  return bad != bad_.end() ? bad->second : std::string();
}

}  // namespace stoker
