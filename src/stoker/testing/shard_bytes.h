#pragma once
// Test helpers for crafted shards: read and write the numbers of a shard's bytes in memory
// through the format unit's structs, and make its checksums consistent again, so that a test
// (or the fuzz target) reaches the bounds checks behind them.

#include <cstdint>
#include <cstring>
#include <string>

#include "stoker/store/manifest.h"
#include "stoker/store/shard_format.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"

namespace stoker::testing {

// The value of type T at `offset` of `bytes` (precondition: it fits).
template <typename T>
T load(const std::string& bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}
template <typename T>
void store(std::string* bytes, uint64_t offset, const T& value) {
  std::memcpy(bytes->data() + offset, &value, sizeof value);
}

inline uint64_t footer_at(const std::string& shard) {
  return shard.size() - shard_format::kFooterBytes;
}

// Rewrites the footer's header and index checksums to those of the bytes that the header's
// schema_len and the footer's index_offset and record_count point at, where those lie inside
// `shard`; leaves the others as they are. Does nothing to a shard shorter than a header and a
// footer.
inline void fix_checksums(std::string* shard) {
  using namespace shard_format;
  if (shard->size() < kMinShardBytes) return;
  const auto prefix = load<HeaderPrefix>(*shard, 0);
  auto footer = load<Footer>(*shard, footer_at(*shard));
  const uint64_t end = footer_at(*shard);
  if (header_bytes(prefix.schema_len) <= end)
    footer.header_checksum = xxh3_64(shard->data(), header_bytes(prefix.schema_len));
  if (footer.index_offset <= end &&
      footer.record_count <= (end - footer.index_offset) / kIndexEntryBytes)
    footer.index_checksum =
        xxh3_64(shard->data() + footer.index_offset, footer.record_count * kIndexEntryBytes);
  store(shard, footer_at(*shard), footer);
}

// Rewrites every index entry's checksum to that of the record it points at, where the footer's
// index and the entry lie inside `shard` (call fix_checksums() after).
inline void fix_record_checksums(std::string* shard) {
  using namespace shard_format;
  if (shard->size() < kMinShardBytes) return;
  const auto footer = load<Footer>(*shard, footer_at(*shard));
  const uint64_t end = footer_at(*shard);
  if (footer.index_offset > end ||
      footer.record_count > (end - footer.index_offset) / kIndexEntryBytes)
    return;
  for (uint64_t i = 0; i < footer.record_count; ++i) {
    const uint64_t at = footer.index_offset + i * kIndexEntryBytes;
    auto entry = load<IndexEntry>(*shard, at);
    if (entry.offset > end || entry.length > end - entry.offset) continue;
    entry.checksum = xxh3_64(shard->data() + entry.offset, entry.length);
    store(shard, at, entry);
  }
}

// Applies `change` to the bytes of shard `shard` of the dataset at `dir`, then makes every
// checksum consistent again: the shard's record, header and index checksums and the manifest's
// index checksum. So only the numbers `change` wrote are wrong.
template <typename Change>
void rewrite_shard(const std::string& dir, int shard, Change change) {
  Manifest manifest = Manifest::load(dir).value_or_throw();
  const std::string path = dir + "/" + manifest.shards[shard].file;
  std::string bytes = read_file(path).value_or_throw();
  change(&bytes);
  fix_record_checksums(&bytes);
  fix_checksums(&bytes);
  throw_if_error(write_file_atomically(path, bytes));
  manifest.shards[shard].index_checksum =
      load<shard_format::Footer>(bytes, footer_at(bytes)).index_checksum;
  throw_if_error(manifest.save(dir));
}

}  // namespace stoker::testing
