#pragma once
// The record checks of `stoker verify`: with those of Dataset::open() (manifest, schema, every
// shard's header, index bounds and footer, and their agreement with the manifest), everything
// a reader of the dataset relies on. Free functions; thread-safe on an immutable Dataset.

#include <cstdint>
#include <functional>

#include "stoker/store/dataset.h"
#include "stoker/util/status.h"

namespace stoker {

// Checks global record i (i < dataset.size()), its shard pinned by the caller: its checksum; its
// layout (check_record_layout: the bytes fields' lengths fit and fill the record); and, if the
// manifest names classes and the schema has an int64 scalar field `label`, that the label is one of
// them. kCorrupt naming the shard file, the record in the shard and the dataset record.
Status check_record(const Dataset& dataset, uint64_t i);

// Checks every record in order (each shard pinned while its records are checked), passing each
// failure to `on_error`; returns how many failed. Throws Error when a shard cannot be fetched.
uint64_t check_records(const Dataset& dataset, const std::function<void(const Status&)>& on_error);

}  // namespace stoker
