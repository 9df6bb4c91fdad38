#pragma once
// The order in which `convert imagefolder` writes an ImageFolder's samples (docs/FORMAT.md):
// ImageFolder's own (class by class), or a permutation of it drawn from a seed, a pure function
// of (seed, split, sample count) that a reader can recompute.

#include <cstdint>
#include <vector>

namespace stoker {

enum class RecordOrder { kFolder, kShuffled };

// The samples' indices in record order: record i is ImageFolder's sample order[i]. kFolder: the
// identity. kShuffled: the Fisher-Yates permutation of [0, count) driven by CounterRng(seed,
// derive_stream(kRecordOrderTag, split)), split 0 for a single dataset or train/, 1 for test/.
std::vector<uint64_t> image_folder_order(RecordOrder order, uint64_t seed, uint64_t split,
                                         uint64_t count);

}  // namespace stoker
