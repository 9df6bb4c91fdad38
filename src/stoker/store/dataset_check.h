#pragma once
// The record checks of `stoker verify`: with those of Dataset::open() (manifest, schema, every
// shard's header, index bounds and footer, and their agreement with the manifest), everything
// a reader of the dataset relies on. Thread-safe on an immutable Dataset, except that one
// RecordCheck is used by one thread.

#include <cstdint>
#include <functional>
#include <vector>

#include "stoker/store/dataset.h"
#include "stoker/util/status.h"

namespace stoker {

// Checks a dataset's records one by one, then what the manifest says of all of them.
class RecordCheck {
 public:
  explicit RecordCheck(const Dataset& dataset);

  // Checks global record i (i < dataset.size()), its shard pinned by the caller: that it was not
  // found bad when read in place (Dataset::found_bad); its checksum;
  // its layout (check_record_layout: the bytes and variable-length fields' lengths fit and fill
  // the record, whole rows, fields sharing a dimension with as many rows); no variable-length
  // field with more rows than the manifest's max_lengths; an image record's image header
  // (image::read_image_header: data read in place keeps an unreadable file as a record whose
  // image is empty, named by the source's record_error as the loader names it); and, if the
  // manifest names classes and the schema has an int64 scalar field `label`, that the label is
  // one of them. kCorrupt naming the shard file, the record in the shard and the dataset record.
  Status check(uint64_t i);
  // After check() of every record: each max_lengths of the manifest is the most rows a record
  // has (kCorrupt naming the manifest and the field otherwise).
  Status finish() const;

 private:
  Status check_fields(uint64_t i);

  const Dataset& dataset_;
  int label_field_ = -1;
  int image_field_ = -1;              // an image record's image, else -1
  std::vector<int> variable_fields_;  // the schema's variable-length fields
  std::vector<uint64_t> most_rows_;   // the most rows seen, per variable_fields_ entry
};

// Checks every record in order (each shard pinned while its records are checked) and then the
// manifest's max_lengths, passing each failure to `on_error`; returns how many failed. Throws
// Error when a shard cannot be fetched.
uint64_t check_records(const Dataset& dataset, const std::function<void(const Status&)>& on_error);

}  // namespace stoker
