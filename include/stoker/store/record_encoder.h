#pragma once
// RecordEncoder: builds the bytes of one record from field values, in the layout of
// docs/FORMAT.md (fixed fields at schema offsets, then a u32 length per bytes or
// variable-length field, then the payloads). Reusable: set fields, encode(), repeat. Not
// thread-safe.

#include <cstdint>
#include <vector>

#include "stoker/store/schema.h"
#include "stoker/util/status.h"

namespace stoker {

class RecordEncoder {
 public:
  // `schema` must outlive the encoder.
  explicit RecordEncoder(const Schema& schema);

  // Copies the value of fixed field `field`; `size` must equal its fixed_bytes().
  Status set_fixed(int field, const void* data, size_t size);
  // Copies the value of bytes field `field` (at most 4 GiB - 1).
  Status set_bytes(int field, const void* data, size_t size);
  // Copies `rows` rows (rows × row_bytes() bytes, at most 4 GiB - 1) of variable-length field
  // `field`. Fields sharing a dimension must get as many rows: DatasetWriter::append checks.
  Status set_rows(int field, const void* data, uint64_t rows);
  // The encoded record; valid until the next call on this encoder. Fields not set since the
  // last encode() keep their previous values (zero / empty at first).
  const std::vector<uint8_t>& encode();

 private:
  Status set_payload(int field, const void* data, size_t size);

  const Schema& schema_;
  std::vector<uint8_t> record_;
  std::vector<std::vector<uint8_t>> variable_;  // per field; empty for fixed fields
};

}  // namespace stoker
