#include "stoker/store/import/unit_records.h"

#include <fmt/format.h>

#include <utility>

namespace stoker {

UnitRecords::UnitRecords(const Schema& schema, uint64_t first, int64_t rows,
                         std::map<uint64_t, std::string>& bad, std::vector<uint8_t> empty)
    : schema_(schema), first_(first), rows_(rows), bad_(bad), empty_(std::move(empty)) {
  records_.reserve(static_cast<size_t>(rows));
}

void UnitRecords::append(std::vector<uint8_t> record, std::optional<std::string> reason) {
  if (full()) return;
  if (!reason && bytes_ + record.size() > kMaxUnitRecordBytes) {
    fail_rest(fmt::format(
        "its unit's rows decode to more than {} GiB from here (a decompression bomb, or a row "
        "group too large to read at once: write smaller ones)",
        kMaxUnitRecordBytes >> 30));
    return;
  }
  if (reason) bad_[first_ + records_.size()] = std::move(*reason);
  bytes_ += record.size();
  records_.push_back(std::move(record));
}

void UnitRecords::fail_rest(const std::string& reason) {
  while (!full()) append(empty_, reason);
}

ShardReader UnitRecords::reader(const std::string& name) const {
  return ShardReader::in_memory(name, schema_, records_);
}

}  // namespace stoker
