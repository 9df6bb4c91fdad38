#include "stoker/store/shard_format.h"

#include <map>
#include <string>
#include <utility>

#include "stoker/store/record_view.h"

namespace stoker {
namespace shard_format {

Result<std::vector<uint8_t>> encode_header(const std::string& schema_json, uint32_t version) {
  if (schema_json.size() > std::numeric_limits<uint32_t>::max())
    return invalid_argument("schema JSON of " + std::to_string(schema_json.size()) +
                            " bytes does not fit a shard header");
  HeaderPrefix prefix;
  std::memcpy(prefix.magic, kHeaderMagic, sizeof prefix.magic);
  prefix.version = version;
  prefix.schema_len = static_cast<uint32_t>(schema_json.size());
  std::vector<uint8_t> header(data_start(prefix.schema_len), 0);
  std::memcpy(header.data(), &prefix, sizeof prefix);
  std::memcpy(header.data() + kHeaderFixedBytes, schema_json.data(), schema_json.size());
  return header;
}

Footer encode_footer(uint64_t index_offset, uint64_t record_count, uint64_t index_checksum,
                     uint64_t header_checksum) {
  Footer footer{index_offset, record_count, index_checksum, header_checksum, {}};
  std::memcpy(footer.magic, kFooterMagic, sizeof footer.magic);
  return footer;
}

Result<Layout> decode_layout(const uint8_t* file, uint64_t size, const std::string& origin) {
  const std::string file_bytes = " (file " + std::to_string(size) + " bytes)";
  if (size < kMinShardBytes) return corrupt(origin + ": truncated shard" + file_bytes);
  HeaderPrefix prefix;
  std::memcpy(&prefix, file, sizeof prefix);
  if (std::memcmp(prefix.magic, kHeaderMagic, sizeof prefix.magic) != 0)
    return corrupt(origin + ": not a stoker shard (bad magic)");
  if (prefix.version > kVersion)
    return unsupported(origin + ": shard format version " + std::to_string(prefix.version) +
                       " is newer than this stoker reads (" + std::to_string(kVersion) + ")");
  if (prefix.version == 0) return corrupt(origin + ": shard format version 0");
  Footer footer;
  std::memcpy(&footer, file + size - kFooterBytes, sizeof footer);
  if (std::memcmp(footer.magic, kFooterMagic, sizeof footer.magic) != 0)
    return corrupt(origin + ": truncated shard (no footer; was the write interrupted?)");

  // Every bound below is compared by subtraction from `footer_at`, never by a sum that could
  // wrap: data_start() of a u32 is far below 2^64.
  const uint64_t footer_at = size - kFooterBytes;
  Layout layout;
  layout.version = prefix.version;
  layout.schema_len = prefix.schema_len;
  layout.data_begin = data_start(prefix.schema_len);
  if (layout.data_begin > footer_at)
    return corrupt(origin + ": schema length " + std::to_string(prefix.schema_len) +
                   " runs past the file" + file_bytes);
  if (footer.record_count > (footer_at - layout.data_begin) / kIndexEntryBytes)
    return corrupt(origin + ": record count " + std::to_string(footer.record_count) +
                   " is more than the file can index" + file_bytes);
  const uint64_t index_size = footer.record_count * kIndexEntryBytes;
  if (footer.index_offset < layout.data_begin || footer.index_offset > footer_at ||
      footer.index_offset % kIndexAlignment != 0 || footer_at - footer.index_offset != index_size)
    return corrupt(origin + ": index at offset " + std::to_string(footer.index_offset) + " of " +
                   std::to_string(footer.record_count) +
                   " entries does not end at the footer (truncated or corrupt footer)" +
                   file_bytes);
  layout.index_offset = footer.index_offset;
  layout.record_count = footer.record_count;
  layout.index_checksum = footer.index_checksum;
  layout.header_checksum = footer.header_checksum;
  return layout;
}

Status check_index_entry(const Layout& layout, const IndexEntry& entry, uint64_t min_record_bytes,
                         uint64_t record, const std::string& origin) {
  const std::string where = origin + ": record " + std::to_string(record) + ": ";
  if (entry.offset < layout.data_begin || entry.offset > layout.index_offset)
    return corrupt(where + "offset " + std::to_string(entry.offset) +
                   " lies outside the records [" + std::to_string(layout.data_begin) + ", " +
                   std::to_string(layout.index_offset) + ")");
  if (entry.length > layout.index_offset - entry.offset)
    return corrupt(where + "length " + std::to_string(entry.length) + " at offset " +
                   std::to_string(entry.offset) + " runs past the records (which end at " +
                   std::to_string(layout.index_offset) + ")");
  if (entry.length < min_record_bytes)
    return corrupt(where + "length " + std::to_string(entry.length) +
                   " is shorter than the schema's minimum " + std::to_string(min_record_bytes));
  return Status::ok();
}

void encode_variable_part(const Schema& schema, const std::vector<std::vector<uint8_t>>& payloads,
                          std::vector<uint8_t>* record) {
  const auto& fields = schema.fields();
  for (size_t f = 0; f < fields.size(); ++f) {
    if (fields[f].is_fixed()) continue;
    const uint32_t len = static_cast<uint32_t>(payloads[f].size());
    const auto* p = reinterpret_cast<const uint8_t*>(&len);
    record->insert(record->end(), p, p + kLengthBytes);
  }
  for (size_t f = 0; f < fields.size(); ++f) {
    if (!fields[f].is_fixed())
      record->insert(record->end(), payloads[f].begin(), payloads[f].end());
  }
}

}  // namespace shard_format

namespace {

// Walks the length table of `record` in schema order, checking that each payload fits, up to
// bytes field `field` (whose payload it returns) or, with field == -1, to the end (returning
// the empty span where the last payload ends).
Result<ByteSpan> walk_payloads(const Schema& schema, ByteSpan record, int field) {
  const auto& fields = schema.fields();
  if (record.size < schema.min_record_bytes())
    return corrupt("length table runs past the record (" + std::to_string(record.size) +
                   " bytes, the schema needs " + std::to_string(schema.min_record_bytes()) + ")");
  const uint8_t* table = record.data + schema.fixed_bytes();
  size_t payload = schema.min_record_bytes();
  for (int f = 0; f < static_cast<int>(fields.size()); ++f) {
    if (fields[f].is_fixed()) continue;
    const uint32_t len = shard_format::load_u32(table);
    table += shard_format::kLengthBytes;
    if (len > record.size - payload)
      return corrupt("field '" + fields[f].name + "' length " + std::to_string(len) +
                     " runs past the record (" + std::to_string(record.size) + " bytes)");
    if (f == field) return ByteSpan{record.data + payload, len};
    payload += len;
  }
  return ByteSpan{record.data + payload, 0};
}

// Rows of a variable-length field whose payload is `length` bytes; kCorrupt naming the field if
// that is not a whole number of rows.
Result<uint64_t> row_count(const Field& field, uint64_t length) {
  const uint64_t row = field.row_bytes();  // >= 1 in a valid schema
  if (length % row != 0)
    return corrupt("field '" + field.name + "' length " + std::to_string(length) +
                   " is not a multiple of its " + std::to_string(row) + "-byte row");
  return length / row;
}

}  // namespace

Result<ByteSpan> variable_field(const Schema& schema, ByteSpan record, int field) {
  const auto& fields = schema.fields();
  if (field < 0 || field >= static_cast<int>(fields.size()) || fields[field].is_fixed())
    return invalid_argument("field " + std::to_string(field) +
                            " is not a bytes or variable-length field");
  return walk_payloads(schema, record, field);
}

Result<VariableRows> variable_rows(const Schema& schema, ByteSpan record, int field) {
  const auto& fields = schema.fields();
  if (field < 0 || field >= static_cast<int>(fields.size()) || !fields[field].is_variable_length())
    return invalid_argument("field " + std::to_string(field) + " is not a variable-length field");
  STOKER_ASSIGN_OR_RETURN(ByteSpan payload, walk_payloads(schema, record, field));
  STOKER_ASSIGN_OR_RETURN(uint64_t rows, row_count(fields[field], payload.size));
  return VariableRows{rows, payload};
}

Status check_record_layout(const Schema& schema, ByteSpan record) {
  STOKER_ASSIGN_OR_RETURN(ByteSpan end, walk_payloads(schema, record, -1));
  const size_t used = static_cast<size_t>(end.data - record.data);
  if (used != record.size)
    return corrupt("fields end at byte " + std::to_string(used) + " of a " +
                   std::to_string(record.size) + "-byte record");
  // The length table fits (walked above): each variable-length field's rows, and the first
  // field that named each dimension.
  const auto& fields = schema.fields();
  std::map<std::string, std::pair<uint64_t, int>> dims;
  const uint8_t* table = record.data + schema.fixed_bytes();
  for (int f = 0; f < static_cast<int>(fields.size()); ++f) {
    if (fields[f].is_fixed()) continue;
    const uint32_t len = shard_format::load_u32(table);
    table += shard_format::kLengthBytes;
    if (!fields[f].is_variable_length()) continue;
    STOKER_ASSIGN_OR_RETURN(uint64_t rows, row_count(fields[f], len));
    const auto [it, first] = dims.try_emplace(fields[f].length_dim, rows, f);
    if (!first && it->second.first != rows)
      return corrupt("field '" + fields[f].name + "' has " + std::to_string(rows) + " rows but '" +
                     fields[it->second.second].name + "', which shares dimension '" +
                     fields[f].length_dim + "', has " + std::to_string(it->second.first));
  }
  return Status::ok();
}

}  // namespace stoker
