#pragma once
// RecordViews: the fields of records read in place from another format's file (a token file's
// samples, store/import/token_source.h), each a typed view of the mapped bytes, widened to the
// field's dtype when it is copied (into a batch's slot: pipeline/transform.h's copies), so no
// record is built nor copied on the way. Field f of record i is the field's elements, of type
// fields[f].type, at base + i * stride + fields[f].offset; views may overlap (labels are
// input_ids shifted by one token). A field may instead be computed from the record's bytes by
// the views' ComputedFields (a token sample's position_ids from its documents' boundaries,
// store/import/token_boundaries.h), fixed or variable-length. Little-endian bytes on a
// little-endian host. Whoever makes views checks their values first (each fits the field's
// dtype): widening checks nothing. Immutable: thread-safe.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "stoker/store/schema.h"
#include "stoker/util/byte_span.h"

namespace stoker {

// The stored type of a view's elements.
enum class StoredType { kUint8, kInt8, kUint16, kInt16, kUint32, kInt32, kInt64, kUint64 };

// Bytes of one element of `type` (1 to 8).
size_t stored_type_size(StoredType type);

// `n` elements of `type` at `bytes` widened into n int64s at `out` (any alignment), unchecked
// (a uint64 above int64's range wraps). Meanwhile the CPU is hinted to bring `ahead`'s bytes
// into cache (a prefetch never faults), spread over the writing.
void widen_to_int64(StoredType type, const uint8_t* bytes, size_t n, uint8_t* out,
                    ByteSpan ahead = {});

// One field's view: elements of `type` from `offset` bytes after the record's start, written
// as `dtype`: int64 (from any type, widened) or uint8 (from kUint8 only, copied); or, where
// `computed`, the views' ComputedFields' (type and offset unused), of `dtype`.
struct FieldView {
  StoredType type = StoredType::kUint8;
  uint64_t offset = 0;
  DType dtype = DType::kInt64;
  bool computed = false;
};

// The computed fields of a reader's records (record i: the views' record i).
class ComputedFields {
 public:
  virtual ~ComputedFields() = default;
  // Rows of the variable-length field `field` in record i (unused for a fixed field).
  virtual size_t rows(uint64_t i, int field) const = 0;
  // Writes field `field` of record i into `out`: a fixed field's elements, or a variable-length
  // field's rows(i, field) rows, as the field's dtype.
  virtual void write(uint64_t i, int field, uint8_t* out) const = 0;
};

struct RecordViews {
  const uint8_t* base = nullptr;
  uint64_t stride = 0;               // bytes from one record's start to the next one's
  std::vector<FieldView> fields;     // by schema field
  std::shared_ptr<const void> hold;  // keeps the bytes mapped
  std::shared_ptr<const ComputedFields> computed;  // the computed fields' (null: none is)
  // Bytes from a record's start that its views (not its computed fields) read: set by
  // ShardReader::viewed from the schema.
  uint64_t extent = 0;

  // Where record i's views start.
  const uint8_t* start(uint64_t i) const { return base + i * stride; }
  // Hints the CPU to bring the bytes record i's views read into cache (a prefetch never
  // faults): a sample of a token file is a page or so at a random place, which the hardware
  // prefetcher would only start on after its first misses.
  void prefetch(uint64_t i) const {
    if (extent == 0) return;
    const uint8_t* at = start(i);
    for (uint64_t offset = 0; offset < extent; offset += 64) __builtin_prefetch(at + offset);
    __builtin_prefetch(at + extent - 1);
  }
  // The bytes record i's views read (empty where they read none).
  ByteSpan bytes(uint64_t i) const { return {start(i), static_cast<size_t>(extent)}; }
  // Hints the CPU to bring the first line of the bytes record i's views read into cache.
  void prefetch_first(uint64_t i) const {
    if (extent > 0) __builtin_prefetch(start(i));
  }
  // Writes the `elements` elements of fixed field `field` of record i, as its dtype, into `out`,
  // bringing `ahead`'s bytes into cache meanwhile where it widens (widen_to_int64).
  void write(uint64_t i, int field, size_t elements, uint8_t* out, ByteSpan ahead = {}) const;
  // Rows of the computed variable-length field `field` in record i.
  size_t rows(uint64_t i, int field) const { return computed->rows(i, field); }
  // Writes those rows into `out`.
  void write_rows(uint64_t i, int field, uint8_t* out) const { computed->write(i, field, out); }
};

// A record of a viewed reader: its views, and its index among them.
struct ViewedRecord {
  const RecordViews* views = nullptr;
  uint64_t record = 0;
};

}  // namespace stoker
