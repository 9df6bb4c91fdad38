#include "stoker/pipeline/variable_samples.h"

#include <algorithm>
#include <cstring>

namespace stoker {
namespace {

// One sample moved from C-contiguous `shape` to the grid of `largest`: row by row (a row being
// the last dimension), the last row first. A row's place on the grid is never before its packed
// place, and the grid's rows are at least as long, so a moved row never lands on one still to
// move. Then every grid row is zero past the sample's row, and rows outside the sample whole.
void pad_sample(uint8_t* sample, size_t element_bytes, const int64_t* shape, size_t rank,
                const int64_t* largest) {
  if (rank == 0) return;
  const size_t row = static_cast<size_t>(shape[rank - 1]) * element_bytes;
  const size_t grid_row = static_cast<size_t>(largest[rank - 1]) * element_bytes;
  int64_t rows = 1;       // the sample's rows
  int64_t grid_rows = 1;  // the grid's
  for (size_t d = 0; d + 1 < rank; ++d) {
    rows *= shape[d];
    grid_rows *= largest[d];
  }
  // The grid row of sample row r: its index over the outer dimensions, on the grid's strides.
  auto grid_index = [&](int64_t r) {
    int64_t index = 0;
    int64_t stride = 1;
    for (size_t d = rank - 1; d-- > 0;) {
      index += (r % shape[d]) * stride;
      r /= shape[d];
      stride *= largest[d];
    }
    return index;
  };
  const bool in_place = row == grid_row && rows == grid_rows;
  if (!in_place) {
    for (int64_t r = rows; r-- > 0;) {
      const size_t to = static_cast<size_t>(grid_index(r)) * grid_row;
      const size_t from = static_cast<size_t>(r) * row;
      if (to != from && row > 0) std::memmove(sample + to, sample + from, row);
    }
  }
  // Zeros: each grid row inside the sample past its row, every grid row outside it.
  int64_t next = 0;  // the next sample row's grid row
  int64_t r = 0;
  for (int64_t g = 0; g < grid_rows; ++g) {
    uint8_t* at = sample + static_cast<size_t>(g) * grid_row;
    if (r < rows && g == next) {
      std::memset(at + row, 0, grid_row - row);
      if (++r < rows) next = grid_index(r);
    } else {
      std::memset(at, 0, grid_row);
    }
  }
}

}  // namespace

void largest_shape(const int64_t* shapes, size_t rank, int64_t count, int64_t* largest) {
  std::fill(largest, largest + rank, int64_t{0});
  for (int64_t k = 0; k < count; ++k) {
    for (size_t d = 0; d < rank; ++d)
      largest[d] = std::max(largest[d], shapes[static_cast<size_t>(k) * rank + d]);
  }
}

void pad_samples(uint8_t* block, size_t slot_bytes, size_t element_bytes, const int64_t* shapes,
                 size_t rank, int64_t count, const int64_t* largest) {
  for (int64_t k = 0; k < count; ++k)
    pad_sample(block + static_cast<size_t>(k) * slot_bytes, element_bytes,
               shapes + static_cast<size_t>(k) * rank, rank, largest);
}

}  // namespace stoker
