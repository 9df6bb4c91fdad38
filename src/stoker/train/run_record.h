#pragma once
// The run record: the first record of a run's log (run_log.h, kind "run") — the resolved
// configuration, the versions of stoker, LibTorch and the formats, the data and the machine — as
// one JSON object. Pure function of a set-up run; thread-safe.

#include <cstdint>
#include <string>

#include "stoker/train/training_setup.h"

namespace stoker {

// `setup`'s run record, for a run starting at optimizer step `step` (a resumed run's) and
// resumed from checkpoint `resumed_from` ("" if none): a JSON object with "versions",
// "config", "data", "machine" and "step".
std::string run_record(const TrainingSetup& setup, int64_t step, const std::string& resumed_from);

}  // namespace stoker
