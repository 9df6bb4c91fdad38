#include "stoker/store/shard_reader.h"

#include <string>

#include "stoker/store/shard_format.h"
#include "stoker/util/checksum.h"

namespace stoker {

using namespace shard_format;

Result<ShardReader> ShardReader::open(const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  const uint8_t* base = file.data();
  const size_t size = file.size();
  if (size < kHeaderFixedBytes + kFooterBytes)
    return corrupt(path + ": truncated shard (" + std::to_string(size) + " bytes)");
  if (std::memcmp(base, kHeaderMagic, 8) != 0)
    return corrupt(path + ": not a stoker shard (bad magic)");
  uint32_t version = load_u32(base + 8);
  if (version > kVersion)
    return unsupported(path + ": shard format version " + std::to_string(version) +
                       " is newer than this stoker reads (" + std::to_string(kVersion) + ")");
  if (version == 0) return corrupt(path + ": shard format version 0");
  Footer footer;
  std::memcpy(&footer, base + size - kFooterBytes, kFooterBytes);
  if (std::memcmp(footer.magic, kFooterMagic, 8) != 0)
    return corrupt(path + ": truncated shard (no footer; was the write interrupted?)");

  uint32_t schema_len = load_u32(base + 12);
  if (data_start(schema_len) > size - kFooterBytes)
    return corrupt(path + ": header length out of range");
  if (xxh3_64(base, header_bytes(schema_len)) != footer.header_checksum)
    return corrupt(path + ": header checksum mismatch");
  std::string json(reinterpret_cast<const char*>(base + kHeaderFixedBytes), schema_len);
  STOKER_ASSIGN_OR_RETURN(Schema schema, Schema::from_json(json, path));

  const uint64_t index_bytes = footer.record_count * sizeof(Entry);
  if (footer.record_count > size / sizeof(Entry) || footer.index_offset < data_start(schema_len) ||
      footer.index_offset % kIndexAlignment != 0 ||
      footer.index_offset + index_bytes + kFooterBytes != size)
    return corrupt(path + ": index out of range (truncated or corrupt footer)");
  const uint8_t* index_bytes_ptr = base + footer.index_offset;
  if (xxh3_64(index_bytes_ptr, index_bytes) != footer.index_checksum)
    return corrupt(path + ": index checksum mismatch");

  ShardReader reader;
  reader.index_ = reinterpret_cast<const Entry*>(index_bytes_ptr);
  reader.count_ = footer.record_count;
  reader.index_checksum_ = footer.index_checksum;
  reader.data_ = base;
  const uint64_t data_begin = data_start(schema_len);
  for (uint64_t i = 0; i < reader.count_; ++i) {
    const Entry& e = reader.index_[i];
    if (e.offset < data_begin || e.length > footer.index_offset - e.offset ||
        e.length < schema.min_record_bytes())
      return corrupt(path + ": record " + std::to_string(i) + ": index entry out of range");
  }
  reader.schema_ = std::move(schema);
  reader.file_ = std::move(file);
  return reader;
}

ByteSpan ShardReader::record(uint64_t i) const {
  const Entry& e = entry(i);
  return {data_ + e.offset, e.length};
}

Result<ByteSpan> ShardReader::variable_field(uint64_t i, int field) const {
  Result<ByteSpan> span = stoker::variable_field(schema_, record(i), field);
  if (!span.is_ok())
    return Status(span.status().code(),
                  path() + ": record " + std::to_string(i) + ": " + span.status().message());
  return span;
}

Status ShardReader::verify_record(uint64_t i) const {
  const Entry& e = entry(i);
  if (xxh3_64(data_ + e.offset, e.length) != e.checksum)
    return corrupt(path() + ": record " + std::to_string(i) + ": checksum mismatch");
  return Status::ok();
}

}  // namespace stoker
