#pragma once
// The batch field that says which part (a mixture's source, store/mixed_shard_source.h) each
// sample came from: an int64, the part's number, from the sample's record index. Immutable:
// thread-safe.

#include <cstdint>
#include <memory>
#include <vector>

#include "stoker/pipeline/transform.h"

namespace stoker {

// The field's name in a mixture's batches.
inline constexpr const char* kPartField = "source";

// The transform writing the part of each sample, for parts whose records start at
// `part_starts` (the first 0, ascending).
std::shared_ptr<const Transform> part_index_transform(std::vector<uint64_t> part_starts);

}  // namespace stoker
