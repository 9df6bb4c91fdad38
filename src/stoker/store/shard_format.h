#pragma once
// The byte layout of a shard file, shared by ShardWriter and ShardReader (docs/FORMAT.md).
// All integers little-endian.
//
//   header : magic "STKSHARD" | u32 version | u32 schema_len | schema JSON | zero pad to 64
//   data   : records, back to back (fixed part, u32 length per bytes field, bytes payloads),
//            then zero padding to a multiple of 8
//   index  : per record { u64 offset, u64 length, u64 xxh3_64(record) }
//   footer : u64 index_offset | u64 record_count | u64 xxh3_64(index) | u64 xxh3_64(header) |
//            magic "STKINDEX"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace stoker::shard_format {

constexpr char kHeaderMagic[8] = {'S', 'T', 'K', 'S', 'H', 'A', 'R', 'D'};
constexpr char kFooterMagic[8] = {'S', 'T', 'K', 'I', 'N', 'D', 'E', 'X'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderFixedBytes = 16;  // magic + version + schema_len
constexpr size_t kDataAlignment = 64;
constexpr size_t kFooterBytes = 40;
constexpr size_t kIndexAlignment = 8;  // zero padding after the last record

struct IndexEntry {
  uint64_t offset;
  uint64_t length;
  uint64_t checksum;
};
static_assert(sizeof(IndexEntry) == 24, "index entries are 24 bytes");

struct Footer {
  uint64_t index_offset;
  uint64_t record_count;
  uint64_t index_checksum;
  uint64_t header_checksum;
  char magic[8];
};
static_assert(sizeof(Footer) == kFooterBytes, "footer is 40 bytes");

// Header bytes (before padding) for a schema of `schema_len` bytes, and the padded size.
inline size_t header_bytes(size_t schema_len) { return kHeaderFixedBytes + schema_len; }
inline size_t data_start(size_t schema_len) {
  return (header_bytes(schema_len) + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "stoker's shard format is little-endian");

}  // namespace stoker::shard_format
