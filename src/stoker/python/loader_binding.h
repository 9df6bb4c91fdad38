#pragma once
// The loader's binding: _stoker.LoaderCore (a LoaderCore over a dataset directory) and
// _stoker.LoaderEpoch (the batches of one epoch, each a dict of tensors made from DLPack
// capsules). python/stoker/loader.py builds stoker.Loader on them: defaults, transforms,
// state_dict, devices.
//
// Threads: every call holds the GIL except the wait for a batch, which releases it and wakes
// every 50 ms to let Python handle signals (Ctrl-C raises KeyboardInterrupt there). While a
// thread waits, any other call on the same loader raises RuntimeError; an epoch's batches are
// taken by the thread that started it. Nothing else is shared, so no misuse can crash.

#include <pybind11/pybind11.h>

namespace stoker::python {

// Adds LoaderCore and LoaderEpoch to `module`.
void register_loader(pybind11::module_& module);

}  // namespace stoker::python
