#pragma once
// Decoding one record's bytes by its schema (the record layout of docs/FORMAT.md: fixed part,
// a u32 length per bytes or variable-length field, payloads), for anyone holding a record and its
// Schema — a ShardReader, a transform, a test. Free functions on borrowed bytes; thread-safe.

#include <cstddef>
#include <cstdint>

#include "stoker/store/schema.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

// The payload of bytes or variable-length field `field` of `record`: kCorrupt if the record's
// length table or the field's payload does not fit the record, kInvalidArgument if `field` is a
// fixed field or out of range. The message names the field; callers add the shard and record.
Result<ByteSpan> variable_field(const Schema& schema, ByteSpan record, int field);

// The value of a variable-length field: `rows` rows of field.row_bytes() bytes, back to back in
// `bytes` (row-major, little-endian), so of shape [rows] + field.shape.
struct VariableRows {
  uint64_t rows = 0;
  ByteSpan bytes;
};

// The rows of variable-length field `field` of `record`: variable_field()'s checks, and kCorrupt
// if its length is not a multiple of the row; kInvalidArgument if `field` is not variable-length.
Result<VariableRows> variable_rows(const Schema& schema, ByteSpan record, int field);

// Checks that `record` is laid out as the schema says: its length table fits, the payloads of
// the bytes and variable-length fields end exactly where the record does, each variable-length
// payload is a whole number of rows and fields sharing a dimension name have as many rows (the
// writer makes every record so; fixed fields fit any record at least schema.min_record_bytes()
// long). kCorrupt naming the field.
Status check_record_layout(const Schema& schema, ByteSpan record);

// The bytes of fixed field `field` of `record` (precondition: the field is fixed and
// record.size >= schema.min_record_bytes()); schema.fields()[field].fixed_bytes() long.
inline const uint8_t* fixed_field(const Schema& schema, ByteSpan record, int field) {
  return record.data + schema.fixed_offset(field);
}

}  // namespace stoker
