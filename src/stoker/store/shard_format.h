#pragma once
// The shard format unit (docs/FORMAT.md): the one place that knows how a shard's header, index
// entries, footer and records are laid out. ShardWriter, ShardReader and RecordEncoder encode
// and decode through it (LevelDB's log_format.h / table/format.cc pattern). The decoders check
// every number against the file's size with overflow-safe arithmetic, so a shard whose numbers
// point outside the file is rejected (kCorrupt, naming it) before anything reads there.
// All integers little-endian. Constants and free functions; thread-safe.
//
//   header : magic "STKSHARD" | u32 version | u32 schema_len | schema JSON | zero pad to 64
//   data   : records, back to back (fixed part, u32 length per bytes or variable-length field,
//            payloads),
//            then zero padding to a multiple of 8
//   index  : per record { u64 offset, u64 length, u64 xxh3_64(record) }
//   footer : u64 index_offset | u64 record_count | u64 xxh3_64(index) | u64 xxh3_64(header) |
//            magic "STKINDEX"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "stoker/store/schema.h"
#include "stoker/store/shard_index.h"
#include "stoker/util/status.h"

namespace stoker::shard_format {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "stoker's shard format is little-endian");

// The newest shard version this code reads (docs/FORMAT.md "Versioning"); it writes each shard
// in the version its schema needs (Schema::format_version): 1 without variable-length fields.
constexpr uint32_t kVersion = 2;
constexpr char kHeaderMagic[8] = {'S', 'T', 'K', 'S', 'H', 'A', 'R', 'D'};
constexpr char kFooterMagic[8] = {'S', 'T', 'K', 'I', 'N', 'D', 'E', 'X'};

// The fixed start of the header; the schema JSON (schema_len bytes) follows it.
struct HeaderPrefix {
  char magic[8];
  uint32_t version;
  uint32_t schema_len;
};
constexpr uint64_t kHeaderFixedBytes = sizeof(HeaderPrefix);
static_assert(kHeaderFixedBytes == 16, "header prefix is 16 bytes");

// IndexEntry (shard_index.h): { u64 offset, u64 length, u64 checksum }.
constexpr uint64_t kIndexEntryBytes = sizeof(IndexEntry);
static_assert(kIndexEntryBytes == 24, "index entries are 24 bytes");

// The last bytes of a shard.
struct Footer {
  uint64_t index_offset;
  uint64_t record_count;
  uint64_t index_checksum;
  uint64_t header_checksum;
  char magic[8];
};
constexpr uint64_t kFooterBytes = sizeof(Footer);
static_assert(kFooterBytes == 40, "footer is 40 bytes");

constexpr uint64_t kDataAlignment = 64;  // the first record's offset
constexpr uint64_t kIndexAlignment = 8;  // index_offset; zero padding after the last record
constexpr uint64_t kMinShardBytes = kHeaderFixedBytes + kFooterBytes;
// Record layout: one u32 length per bytes or variable-length field after the fixed part.
constexpr size_t kLengthBytes = sizeof(uint32_t);
constexpr uint64_t kMaxPayloadBytes = std::numeric_limits<uint32_t>::max();

inline uint64_t round_up(uint64_t n, uint64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}
// Header bytes covered by the header checksum (magic to the end of the schema JSON).
inline uint64_t header_bytes(uint64_t schema_len) { return kHeaderFixedBytes + schema_len; }
// Offset of the first record: the header padded to kDataAlignment.
inline uint64_t data_start(uint64_t schema_len) {
  return round_up(header_bytes(schema_len), kDataAlignment);
}
// Size of a finished shard whose records end at `records_end`, holding `record_count` records.
inline uint64_t shard_bytes(uint64_t records_end, uint64_t record_count) {
  return round_up(records_end, kIndexAlignment) + record_count * kIndexEntryBytes + kFooterBytes;
}

// Header: the bytes from offset 0 to data_start(schema_json.size()), of format `version`.
// kInvalidArgument if the JSON does not fit a u32 length.
Result<std::vector<uint8_t>> encode_header(const std::string& schema_json, uint32_t version = 1);

// Footer: the last kFooterBytes bytes of a shard.
Footer encode_footer(uint64_t index_offset, uint64_t record_count, uint64_t index_checksum,
                     uint64_t header_checksum);

// Where the parts of a shard lie, as its header and footer say.
struct Layout {
  uint32_t version = 0;  // 1 .. kVersion
  uint32_t schema_len = 0;
  uint64_t data_begin = 0;    // first record, data_start(schema_len)
  uint64_t index_offset = 0;  // first index entry; records lie in [data_begin, index_offset)
  uint64_t record_count = 0;
  uint64_t index_checksum = 0;
  uint64_t header_checksum = 0;
};

// Decodes the header prefix and the footer of the `size` bytes at `file` and checks that the
// header, the records and the index lie inside them: size ≥ kMinShardBytes, both magics, the
// version (kUnsupported if newer), data_start(schema_len) ≤ size − kFooterBytes, index_offset ≥
// data_begin and a multiple of kIndexAlignment, index_offset + kIndexEntryBytes × record_count
// + kFooterBytes == size, all without overflow. Checksums are not checked. Errors name `origin`.
Result<Layout> decode_layout(const uint8_t* file, uint64_t size, const std::string& origin);

// The index of a shard whose layout decode_layout() accepted; 8-byte aligned if `file` is.
inline const IndexEntry* index_entries(const uint8_t* file, const Layout& layout) {
  return reinterpret_cast<const IndexEntry*>(file + layout.index_offset);
}

// Checks that index entry `record` lies inside the records region of `layout` and is at least
// `min_record_bytes` long; kCorrupt naming `origin` and the record otherwise.
Status check_index_entry(const Layout& layout, const IndexEntry& entry, uint64_t min_record_bytes,
                         uint64_t record, const std::string& origin);

// Record layout: appends the length table and the payloads of the bytes and variable-length
// fields to `record`, which holds the fixed part (schema.fixed_bytes() bytes). payloads[f] is the
// value of field f (entries of fixed fields are ignored); each at most kMaxPayloadBytes.
void encode_variable_part(const Schema& schema, const std::vector<std::vector<uint8_t>>& payloads,
                          std::vector<uint8_t>* record);

// Unaligned little-endian load.
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace stoker::shard_format
