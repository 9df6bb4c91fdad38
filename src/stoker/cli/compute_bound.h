#pragma once
// The compute-only bound of a training run: the same model and optimizer stepping on one
// resident batch, so no time at all goes to data. `stoker bench train` sets a real run beside
// it: a loader that keeps up brings the run within a few percent of this bound.

#include <cstdint>
#include <functional>
#include <string>

#include "stoker/train/models.h"
#include "stoker/train/optimizers.h"

namespace stoker::cli {

// Seconds for `steps` optimizer steps of model `model` (make_model name), fresh from `seed`,
// on random batches of `batch_size` inputs shaped like `spec`, with cross-entropy loss and
// `optimizer`. The steps cycle through `distinct_batches` resident batches: 1 is the bound
// proper (the batch stays in cache); more makes every step read a batch it has not just used,
// as any input pipeline must. The first step is timed, as a training epoch's is. `on_step`, if
// set, is called with the steps done: 0 as the timing starts, then after each step. Uses the
// current intra-op thread setting.
double compute_only_seconds(const std::string& model, const ModelSpec& spec,
                            const OptimizerSpec& optimizer, int64_t batch_size, int64_t steps,
                            uint64_t seed, int64_t distinct_batches = 1,
                            const std::function<void(int64_t steps_done)>& on_step = {});

}  // namespace stoker::cli
