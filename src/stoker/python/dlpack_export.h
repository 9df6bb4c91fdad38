#pragma once
// DLPack export: a batch field as a "dltensor" capsule that torch.utils.dlpack.from_dlpack (or
// any DLPack consumer) turns into a tensor viewing the pooled buffer, without a copy. The
// capsule, and the tensor made from it, hold a copy of the batch's owner: the buffer goes back
// to the pool only when the last of them is gone (docs/DESIGN.md contract 4).

#include <pybind11/pybind11.h>

#include <memory>

#include "stoker/pipeline/loader_core.h"

namespace stoker::python {

// A "dltensor" capsule for `field` (a CPU array) kept alive by `owner`. An unconsumed capsule
// frees its tensor when collected; a consumer renames it "used_dltensor" and calls the
// deleter itself, from any thread, with or without the GIL. Needs the GIL.
pybind11::capsule to_dlpack(const HostField& field, std::shared_ptr<const void> owner);

}  // namespace stoker::python
