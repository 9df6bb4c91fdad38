#pragma once
// The run record: the first record of a run's log (run_log.h, kind "run") — the resolved
// configuration, the versions of stoker, LibTorch and the formats, the data and the machine — as
// one JSON object. Pure function of a set-up run; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/store/data_identity.h"
#include "stoker/train/training_setup.h"

namespace stoker {

// `setup`'s run record, for a run starting at optimizer step `step` (a resumed run's) and
// resumed from checkpoint `resumed_from` ("" if none), its data's files `data_files`
// (store/data_identity.h): a JSON object with "versions", "config", "data", "machine" and
// "step".
std::string run_record(const TrainingSetup& setup, int64_t step, const std::string& resumed_from,
                       const std::vector<FileBlock>& data_files);

}  // namespace stoker
