#pragma once
// The records of one unit of a table read in place (UnitReadSource::read_unit's: a Parquet row
// group, an Arrow record batch), its rows added in order: a bad row's reason kept in `bad` by
// its global index (its record what the layout makes of it). Records beyond kMaxUnitRecordBytes are
// refused: that row and the rest are bad, full() turns true, and append() does nothing more.
// One unit's read, on one thread.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/schema.h"
#include "stoker/store/shard_reader.h"

namespace stoker {

// The most rows a unit of a table (a Parquet row group, an Arrow record batch) may have: a unit's
// records are built in memory, and a damaged file may claim any number (Spark's and Hugging
// Face's image units hold thousands).
constexpr int64_t kMaxRowsPerUnit = int64_t{1} << 20;

// The most bytes a unit's records may hold. A file whose values decode to far more than it
// holds (a decompression bomb: one large image repeated by a dictionary, or compressed many
// times over) or a row group too large to read at once meets it: its rows from there are bad.
inline constexpr uint64_t kMaxUnitRecordBytes = uint64_t{1} << 30;

class UnitRecords {
 public:
  // A unit of `rows` rows whose first is record `first` of the dataset, in `schema` (which must
  // outlive this); the rows fail_rest fails are `empty`.
  UnitRecords(const Schema& schema, uint64_t first, int64_t rows,
              std::map<uint64_t, std::string>& bad, std::vector<uint8_t> empty);
  // Appends the next row's record, bad for `reason` where there is one.
  void append(std::vector<uint8_t> record, std::optional<std::string> reason);
  // Appends the rows not added yet, each bad for `reason`.
  void fail_rest(const std::string& reason);
  // Whether every row is added (the rest failed): the caller need not make more rows.
  bool full() const { return static_cast<int64_t>(records_.size()) >= rows_; }
  // The unit's records, as a reader named `name`.
  ShardReader reader(const std::string& name) const;

 protected:
  const Schema& schema_;

 private:
  uint64_t first_;
  int64_t rows_;
  std::map<uint64_t, std::string>& bad_;
  std::vector<uint8_t> empty_;
  std::vector<std::vector<uint8_t>> records_;
  uint64_t bytes_ = 0;  // of records_
};

}  // namespace stoker
