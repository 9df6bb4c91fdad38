#pragma once
// The sampler's binding: _stoker.sampler_plan, one rank's batches of an epoch as the native
// loader plans them (sampler.h), for orders Python carries out itself: stoker.Loader over a
// Python dataset reads the same samples in the same order as the native loader would over as
// many records, with the same resume positions (docs/DESIGN.md contracts 1-3).

#include <pybind11/pybind11.h>

namespace stoker::python {

// Adds sampler_plan to `module`.
void register_sampler(pybind11::module_& module);

}  // namespace stoker::python
