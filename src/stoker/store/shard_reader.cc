#include "stoker/store/shard_reader.h"

#include <algorithm>
#include <string>
#include <vector>

#include "stoker/store/shard_format.h"
#include "stoker/util/checksum.h"

namespace stoker {

using namespace shard_format;

Result<ShardReader> ShardReader::open(const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  const uint8_t* base = file.data();
  STOKER_ASSIGN_OR_RETURN(Layout layout, decode_layout(base, file.size(), path));
  if (xxh3_64(base, header_bytes(layout.schema_len)) != layout.header_checksum)
    return corrupt(path + ": header checksum mismatch");
  std::string json(reinterpret_cast<const char*>(base + kHeaderFixedBytes), layout.schema_len);
  STOKER_ASSIGN_OR_RETURN(Schema schema, Schema::from_json(json, path));
  if (layout.version < schema.format_version())
    return corrupt(path + ": a shard of format version " + std::to_string(layout.version) +
                   " with variable-length fields (which need version " +
                   std::to_string(schema.format_version()) + ")");
  // A copy, checked as copied: the offsets and record checksums used from now on are the ones
  // verified here (and against the manifest, by Dataset), whatever is later written over the
  // mapped file. A shard replaced in place by another one, each record of it valid on its own,
  // then fails its records' checksums instead of being read as this one.
  const IndexEntry* mapped_index = index_entries(base, layout);
  std::vector<IndexEntry> index(mapped_index, mapped_index + layout.record_count);
  if (xxh3_64(index.data(), layout.record_count * kIndexEntryBytes) != layout.index_checksum)
    return corrupt(path + ": index checksum mismatch");
  for (uint64_t i = 0; i < layout.record_count; ++i)
    STOKER_RETURN_IF_ERROR(check_index_entry(layout, index[i], schema.min_record_bytes(), i, path));

  ShardReader reader;
  reader.index_ = std::move(index);
  reader.count_ = layout.record_count;
  reader.index_checksum_ = layout.index_checksum;
  reader.data_ = base;
  reader.schema_ = std::move(schema);
  reader.name_ = path;
  reader.bytes_ = file.size();
  reader.file_ = std::move(file);
  return reader;
}

ShardReader ShardReader::in_memory(std::string name, Schema schema,
                                   const std::vector<std::vector<uint8_t>>& records) {
  ShardReader reader;
  uint64_t size = 0;
  for (const std::vector<uint8_t>& record : records) size += record.size();
  reader.memory_.reserve(size);
  reader.index_.reserve(records.size());
  for (const std::vector<uint8_t>& record : records) {
    reader.index_.push_back(
        {reader.memory_.size(), record.size(), xxh3_64(record.data(), record.size())});
    reader.memory_.insert(reader.memory_.end(), record.begin(), record.end());
  }
  reader.count_ = records.size();
  reader.index_checksum_ = xxh3_64(reader.index_.data(), reader.count_ * kIndexEntryBytes);
  reader.data_ = reader.memory_.data();
  reader.schema_ = std::move(schema);
  reader.name_ = std::move(name);
  reader.bytes_ = size;
  return reader;
}

ShardReader ShardReader::in_memory(std::string name, Schema schema,
                                   const std::vector<std::vector<uint8_t>>& records,
                                   const std::vector<int64_t>& parts) {
  ShardReader reader = in_memory(std::move(name), std::move(schema), records);
  std::vector<shard_format::IndexEntry> stored = std::move(reader.index_);
  reader.index_.clear();
  for (size_t k = 0; k < stored.size() && k < parts.size(); ++k) {
    for (int64_t j = 0; j < parts[k]; ++j) {
      reader.index_.push_back(stored[k]);
      reader.parts_.push_back(j);
    }
  }
  reader.count_ = reader.index_.size();
  reader.index_checksum_ = xxh3_64(reader.index_.data(), reader.count_ * kIndexEntryBytes);
  return reader;
}

Result<ShardReader> ShardReader::viewed(std::string name, Schema schema, uint64_t records,
                                        RecordViews views) {
  if (views.fields.size() != schema.fields().size())
    return Status(StatusCode::kInternal, name + ": views of another number of fields");
  for (size_t f = 0; f < views.fields.size(); ++f) {
    const Field& field = schema.fields()[f];
    const FieldView& view = views.fields[f];
    const bool own = (field.dtype == DType::kUint8 && view.type == StoredType::kUint8) ||
                     (field.dtype == DType::kInt64 &&
                      (view.type == StoredType::kInt64 || view.type == StoredType::kUint64));
    const bool fits = view.computed ? views.computed && field.dtype != DType::kBytes
                                    : field.is_fixed() && (own || field.dtype == DType::kInt64);
    if (!fits || view.dtype != field.dtype)
      return Status(StatusCode::kInternal,
                    name + ": field '" + field.name + "' has no view of its type");
  }
  views.extent = 0;
  for (size_t f = 0; f < views.fields.size(); ++f) {
    const FieldView& view = views.fields[f];
    if (view.computed) continue;
    const auto elements = static_cast<uint64_t>(schema.fields()[f].num_elements());
    views.extent = std::max(views.extent, view.offset + elements * stored_type_size(view.type));
  }
  ShardReader reader;
  reader.count_ = records;
  reader.bytes_ = records * views.stride;
  reader.schema_ = std::move(schema);
  reader.name_ = std::move(name);
  reader.viewed_ = std::make_unique<Viewed>();
  reader.viewed_->views = std::move(views);
  return reader;
}

ByteSpan ShardReader::built_record(uint64_t i) const {
  Viewed& viewed = *viewed_;
  std::call_once(viewed.built, [&] {
    const size_t fields = schema_.fields().size();
    std::vector<std::vector<uint8_t>> payloads(fields);
    std::vector<uint8_t> record;
    viewed.starts.reserve(count_ + 1);
    for (uint64_t r = 0; r < count_; ++r) {
      record.assign(schema_.fixed_bytes(), 0);
      for (size_t f = 0; f < fields; ++f) {
        const Field& field = schema_.fields()[f];
        const auto index = static_cast<int>(f);
        if (field.is_fixed()) {
          viewed.views.write(r, index, static_cast<size_t>(field.num_elements()),
                             record.data() + schema_.fixed_offset(index));
        } else {  // a computed variable-length field (viewed() admits no other)
          payloads[f].resize(viewed.views.rows(r, index) * field.row_bytes());
          viewed.views.write_rows(r, index, payloads[f].data());
        }
      }
      shard_format::encode_variable_part(schema_, payloads, &record);
      viewed.starts.push_back(viewed.records.size());
      viewed.records.insert(viewed.records.end(), record.begin(), record.end());
    }
    viewed.starts.push_back(viewed.records.size());
  });
  return {viewed.records.data() + viewed.starts[i], viewed.starts[i + 1] - viewed.starts[i]};
}

Result<ByteSpan> ShardReader::variable_field(uint64_t i, int field) const {
  Result<ByteSpan> span = stoker::variable_field(schema_, record(i), field);
  if (!span.is_ok())
    return Status(span.status().code(),
                  path() + ": record " + std::to_string(i) + ": " + span.status().message());
  return span;
}

Status ShardReader::verify_record(uint64_t i) const {
  if (viewed_) return Status::ok();
  const IndexEntry& e = entry(i);
  if (xxh3_64(data_ + e.offset, e.length) != e.checksum)
    return corrupt(path() + ": record " + std::to_string(i) + ": checksum mismatch");
  return Status::ok();
}

}  // namespace stoker
