#pragma once
// The samples of a variable field (Transform::as_variable) in its block of a batch buffer: each
// written C-contiguous at the start of its slot (slot_bytes apart), its shape beside it. Once the
// batch is complete, the batch's largest shape is found and, for a padded field, every sample is
// moved in place onto that grid with zeros around it, so that the block is one strided array
// [size, largest...] (slots apart) and each sample a view of it. Only variable fields come here.

#include <cstddef>
#include <cstdint>

namespace stoker {

// Every dimension's largest value over `count` shapes of `rank` values (shapes[k * rank + d]),
// into largest[0, rank); zeros for no samples.
void largest_shape(const int64_t* shapes, size_t rank, int64_t count, int64_t* largest);

// Sample k of `count` (element_bytes per element, C-contiguous of shape shapes[k * rank ...]
// at block + k * slot_bytes) moved onto the C-contiguous grid of `largest` at the same place,
// the grid's other elements zeroed. Every shape fits in `largest`, which fits in a slot.
void pad_samples(uint8_t* block, size_t slot_bytes, size_t element_bytes, const int64_t* shapes,
                 size_t rank, int64_t count, const int64_t* largest);

}  // namespace stoker
