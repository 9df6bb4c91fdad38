#include "stoker/store/shard_writer.h"

#include <utility>

#include "stoker/store/shard_format.h"
#include "stoker/util/checksum.h"

namespace stoker {

using namespace shard_format;

Result<ShardWriter> ShardWriter::create(const std::string& path, const Schema& schema) {
  STOKER_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(path));
  std::string json = schema.to_json();
  std::vector<uint8_t> header(data_start(json.size()), 0);
  std::memcpy(header.data(), kHeaderMagic, 8);
  uint32_t version = kVersion;
  uint32_t schema_len = static_cast<uint32_t>(json.size());
  std::memcpy(header.data() + 8, &version, 4);
  std::memcpy(header.data() + 12, &schema_len, 4);
  std::memcpy(header.data() + kHeaderFixedBytes, json.data(), json.size());
  STOKER_RETURN_IF_ERROR(file.append(header.data(), header.size()));
  uint64_t header_checksum = xxh3_64(header.data(), header_bytes(json.size()));
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
  index_.push_back(file_.size());
  index_.push_back(size);
  index_.push_back(xxh3_64(record, size));
  return file_.append(record, size);
}

uint64_t ShardWriter::projected_bytes(uint64_t extra) const {
  return file_.size() + extra + kIndexAlignment + (records() + 1) * sizeof(IndexEntry) +
         kFooterBytes;
}

Status ShardWriter::finish() {
  static const uint8_t kZeros[kIndexAlignment] = {};
  STOKER_RETURN_IF_ERROR(
      file_.append(kZeros, (kIndexAlignment - file_.size() % kIndexAlignment) % kIndexAlignment));
  Footer footer{};
  footer.index_offset = file_.size();
  footer.record_count = records();
  footer.index_checksum = xxh3_64(index_.data(), index_.size() * sizeof(uint64_t));
  footer.header_checksum = header_checksum_;
  std::memcpy(footer.magic, kFooterMagic, 8);
  STOKER_RETURN_IF_ERROR(file_.append(index_.data(), index_.size() * sizeof(uint64_t)));
  STOKER_RETURN_IF_ERROR(file_.append(&footer, sizeof footer));
  index_checksum_ = footer.index_checksum;
  return file_.commit();
}

}  // namespace stoker
