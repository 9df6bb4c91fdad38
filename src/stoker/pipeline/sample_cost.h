#pragma once
// A synthetic heavy transform for benchmarks and tests: it busy-waits a fixed time per sample
// (what a decode + augmentation costs, without the decoder) and writes the sample's global
// index as an int64, so a test can check which sample landed in which slot. Not for training.

#include <chrono>
#include <memory>

#include "stoker/pipeline/transform.h"

namespace stoker {

// The batch field name `stoker bench loader --sample-cost-us` gives it.
inline constexpr const char* kSampleCostField = "sample_cost";

std::shared_ptr<const Transform> busy_wait_transform(std::chrono::microseconds per_sample);

}  // namespace stoker
