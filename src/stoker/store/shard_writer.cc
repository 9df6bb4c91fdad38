#include "stoker/store/shard_writer.h"

#include <utility>

#include "stoker/store/shard_format.h"
#include "stoker/util/checksum.h"

namespace stoker {

using namespace shard_format;

Result<ShardWriter> ShardWriter::create(const std::string& path, const Schema& schema) {
  const std::string json = schema.to_json();
  STOKER_ASSIGN_OR_RETURN(std::vector<uint8_t> header,
                          encode_header(json, schema.format_version()));
  STOKER_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(path));
  STOKER_RETURN_IF_ERROR(file.append(header.data(), header.size()));
  const uint64_t header_checksum = xxh3_64(header.data(), header_bytes(json.size()));
  return ShardWriter(std::move(file), schema.min_record_bytes(), header_checksum);
}

ShardWriter::ShardWriter(AtomicFile file, size_t min_record_bytes, uint64_t header_checksum)
    : file_(std::move(file)),
      min_record_bytes_(min_record_bytes),
      header_checksum_(header_checksum) {}

Status ShardWriter::append(const uint8_t* record, size_t size) {
  if (size < min_record_bytes_)
    return invalid_argument(path() + ": record " + std::to_string(records()) + " is " +
                            std::to_string(size) + " bytes, shorter than the schema's " +
                            std::to_string(min_record_bytes_));
  index_.push_back({file_.size(), size, xxh3_64(record, size)});
  return file_.append(record, size);
}

uint64_t ShardWriter::projected_bytes(uint64_t extra) const {
  return shard_bytes(file_.size() + extra, records() + 1);
}

Status ShardWriter::finish() {
  static const uint8_t kZeros[kIndexAlignment] = {};
  const uint64_t records_end = file_.size();
  STOKER_RETURN_IF_ERROR(
      file_.append(kZeros, round_up(records_end, kIndexAlignment) - records_end));
  const uint64_t index_size = index_.size() * kIndexEntryBytes;
  const Footer footer =
      encode_footer(file_.size(), records(), xxh3_64(index_.data(), index_size), header_checksum_);
  STOKER_RETURN_IF_ERROR(file_.append(index_.data(), index_size));
  STOKER_RETURN_IF_ERROR(file_.append(&footer, sizeof footer));
  index_checksum_ = footer.index_checksum;
  return file_.commit();
}

}  // namespace stoker
