#include "stoker/store/import/image_folder_order.h"

#include <numeric>
#include <utility>

#include "stoker/util/rng.h"

namespace stoker {
namespace {

// The stream tag of the import's record order: "records".
constexpr uint64_t kRecordOrderTag = 0x7265636f726473ULL;

}  // namespace

std::vector<uint64_t> image_folder_order(RecordOrder order, uint64_t seed, uint64_t split,
                                         uint64_t count) {
  std::vector<uint64_t> indices(count);
  std::iota(indices.begin(), indices.end(), uint64_t{0});
  if (order == RecordOrder::kFolder) return indices;
  CounterRng rng(seed, derive_stream(kRecordOrderTag, split));
  for (uint64_t i = count; i > 1; --i) std::swap(indices[i - 1], indices[rng.uniform_below(i)]);
  return indices;
}

}  // namespace stoker
