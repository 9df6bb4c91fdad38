#include "stoker/store/mixed_shard_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <mutex>
#include <utility>

namespace stoker {
namespace {

// Where `schema` and `first` differ, in words ("field 'label' is int64 [1] there, uint8 [1]
// here"), or "" where they are the same.
std::string schema_difference(const Schema& first, const Schema& schema) {
  const auto& a = first.fields();
  const auto& b = schema.fields();
  for (size_t f = 0; f < std::max(a.size(), b.size()); ++f) {
    if (f >= a.size()) return fmt::format("it has field '{}', the first has not", b[f].name);
    if (f >= b.size()) return fmt::format("it has no field '{}'", a[f].name);
    if (!(a[f] == b[f]))
      return fmt::format("its field {} is '{}', the first's '{}'", f, b[f].name, a[f].name);
  }
  return "";
}

}  // namespace

Result<std::shared_ptr<MixedShardSource>> MixedShardSource::create(
    std::vector<std::shared_ptr<const Dataset>> parts) {
  if (parts.size() < 2) return invalid_argument("a mixture needs at least two sources");
  for (size_t p = 1; p < parts.size(); ++p) {
    const std::string difference = schema_difference(parts[0]->schema(), parts[p]->schema());
    if (!difference.empty())
      return invalid_argument(
          fmt::format("mixture: source {} ({}) has not the fields of source 0 ({}): {}", p,
                      parts[p]->dir(), parts[0]->dir(), difference));
    // One transform makes every source's samples: their records must give them alike.
    const std::string& own = parts[p]->manifest().sample_parts;
    const std::string& first = parts[0]->manifest().sample_parts;
    if (own != first)
      return invalid_argument(fmt::format(
          "mixture: source {} ({}) gives {} a record, source 0 ({}) {}", p, parts[p]->dir(),
          own.empty() ? "a sample" : own, parts[0]->dir(), first.empty() ? "a sample" : first));
  }
  return std::shared_ptr<MixedShardSource>(new MixedShardSource(std::move(parts)));
}

MixedShardSource::MixedShardSource(std::vector<std::shared_ptr<const Dataset>> parts)
    : parts_(std::move(parts)) {
  const Manifest& first = parts_[0]->manifest();
  manifest_.format_version = first.format_version;
  manifest_.schema = first.schema;
  manifest_.class_names = first.class_names;
  manifest_.sample_parts = first.sample_parts;  // every part's (create checks)
  std::vector<std::string> locations;
  for (const std::shared_ptr<const Dataset>& part : parts_) {
    const Manifest& m = part->manifest();
    first_shard_.push_back(static_cast<int>(manifest_.shards.size()));
    manifest_.format_version = std::max(manifest_.format_version, m.format_version);
    manifest_.records += m.records;
    manifest_.shards.insert(manifest_.shards.end(), m.shards.begin(), m.shards.end());
    if (m.class_names != manifest_.class_names) manifest_.class_names.clear();
    for (const auto& [field, rows] : m.max_lengths)
      manifest_.max_lengths[field] = std::max(manifest_.max_lengths[field], rows);
    for (int s = 0; s < part->num_shards(); ++s)
      readers_.push_back(part->needs_pins() ? nullptr : &part->shard(s));
    needs_pins_ = needs_pins_ || part->needs_pins();
    follows_plan_ = follows_plan_ || part->follows_plan();
    locations.push_back(part->dir());
  }
  first_shard_.push_back(static_cast<int>(manifest_.shards.size()));
  location_ = fmt::format("mixture of {}", fmt::join(locations, ", "));
  manifest_.source = location_;
}

std::string MixedShardSource::describe() const {
  std::vector<std::string> parts;
  for (const std::shared_ptr<const Dataset>& part : parts_) parts.push_back(part->describe());
  return fmt::format("a mixture of {}: {}", parts_.size(), fmt::join(parts, "; "));
}

size_t MixedShardSource::part_of(int shard) const {
  return static_cast<size_t>(std::upper_bound(first_shard_.begin() + 1, first_shard_.end(), shard) -
                             first_shard_.begin() - 1);
}

Result<ShardPins> MixedShardSource::pin_part(size_t p, const std::vector<int>& shards,
                                             const std::function<bool()>& cancelled,
                                             const std::function<bool()>& awaited) {
  const Dataset& part = *parts_[p];
  std::vector<int64_t> firsts;  // a record of each shard that has one
  for (int s : shards)
    if (part.shard_starts()[s] < part.shard_starts()[s + 1])
      firsts.push_back(static_cast<int64_t>(part.shard_starts()[s]));
  STOKER_ASSIGN_OR_RETURN(ShardPins pins,
                          part.pin(firsts.data(), firsts.size(), cancelled, awaited));
  ShardPins out;
  for (ShardPin& pin : pins) {
    const int global = first_shard_[p] + pin.shard();
    // Changed only while no pin of the shard is held (a pinned shard keeps its reader), so
    // readers of the entry never see it change under them.
    const ShardReader* reader = part.source().readers()[pin.shard()];
    std::lock_guard<std::mutex> lock(readers_mutex_);
    if (readers_[global] != reader) readers_[global] = reader;
    out.emplace_back(global, std::make_shared<ShardPin>(std::move(pin)));
  }
  return out;
}

Result<ShardPin> MixedShardSource::acquire(int shard, const std::function<bool()>& cancelled) {
  const size_t p = part_of(shard);
  STOKER_ASSIGN_OR_RETURN(ShardPins pins,
                          pin_part(p, {shard - first_shard_[p]}, cancelled, nullptr));
  if (pins.empty()) return ShardPin(shard, nullptr);  // a shard of no records, or kept mapped
  return std::move(pins.front());
}

Result<ShardPins> MixedShardSource::acquire_all(const std::vector<int>& shards,
                                                const std::function<bool()>& cancelled,
                                                const std::function<bool()>& awaited) {
  ShardPins out;
  for (size_t i = 0; i < shards.size();) {
    const size_t p = part_of(shards[i]);
    std::vector<int> mine;
    for (; i < shards.size() && shards[i] < first_shard_[p + 1]; ++i)
      mine.push_back(shards[i] - first_shard_[p]);
    STOKER_ASSIGN_OR_RETURN(ShardPins pins, pin_part(p, mine, cancelled, awaited));
    for (ShardPin& pin : pins) out.push_back(std::move(pin));
  }
  return out;
}

ShardSourceStats MixedShardSource::stats() const {
  ShardSourceStats total;
  for (const std::shared_ptr<const Dataset>& part : parts_) {
    const ShardSourceStats s = part->source().stats();
    total.fetched_bytes += s.fetched_bytes;
    total.wait_ns += s.wait_ns;
    total.download_streams += s.download_streams;
    total.most_downloads += s.most_downloads;
    total.notes += s.notes;
    if (!s.last_note.empty()) total.last_note = s.last_note;
  }
  return total;
}

Result<std::vector<FileStamp>> MixedShardSource::file_stamps() const {
  std::vector<FileStamp> all;
  for (const std::shared_ptr<const Dataset>& part : parts_) {
    STOKER_ASSIGN_OR_RETURN(std::vector<FileStamp> stamps, part->source().file_stamps());
    all.insert(all.end(), stamps.begin(), stamps.end());
  }
  return all;
}

Status MixedShardSource::record_error(int shard, uint64_t record, uint64_t /*global*/,
                                      const Status& status) const {
  // Named as the part names it: its file, and its own record number.
  const size_t p = part_of(shard);
  const int local = shard - first_shard_[p];
  return parts_[p]->source().record_error(local, record, parts_[p]->shard_starts()[local] + record,
                                          status);
}

void MixedShardSource::advise(const ShardSchedule& schedule, int64_t lookahead) {
  for (size_t p = 0; p < parts_.size(); ++p) {
    ShardSchedule mine = schedule;
    const auto from = static_cast<ptrdiff_t>(first_shard_[p]);
    const auto to = static_cast<ptrdiff_t>(first_shard_[p + 1]);
    mine.now.assign(schedule.now.begin() + from, schedule.now.begin() + to);
    mine.after.assign(schedule.after.begin() + from, schedule.after.begin() + to);
    parts_[p]->advise(mine, lookahead);
  }
}

void MixedShardSource::advance(int64_t position) {
  for (const std::shared_ptr<const Dataset>& part : parts_) part->advance(position);
}

std::vector<int> MixedShardSource::part_shards() const {
  std::vector<int> counts;
  for (const std::shared_ptr<const Dataset>& part : parts_) counts.push_back(part->num_shards());
  return counts;
}

std::vector<int64_t> MixedShardSource::part_tokens() const {
  std::vector<int64_t> tokens;
  for (const std::shared_ptr<const Dataset>& part : parts_) {
    const std::vector<int64_t> its = part->source().part_tokens();
    tokens.push_back(its.size() == 1 ? its[0] : 0);
  }
  return tokens;
}

}  // namespace stoker
