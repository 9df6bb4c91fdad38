#pragma once
// Labels against the model's classes: every label a run trains or evaluates on is one of the
// model's `classes` ([0, classes)). Checked for the whole dataset when a run starts, and for
// each batch as it is used, since a shard may change under a running run (a record read again
// under --verify once is not checked again): a label outside is one line naming the shard and
// record, never LibTorch's out-of-bounds error. Stateless functions; they throw Error.

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "stoker/store/dataset.h"

namespace stoker {

// kInvalidArgument naming the dataset and the first record whose label is outside.
void check_labels(const Dataset& data, int64_t classes);

// The int64 labels of a batch of `data` (on the CPU). If one is outside, finds the first such
// record of `data` and throws naming its shard and record (the data changed since the run
// checked it); kInvalidArgument naming the dataset if no record holds that label any more.
void check_batch_labels(const at::Tensor& labels, const Dataset& data, int64_t classes);

}  // namespace stoker
