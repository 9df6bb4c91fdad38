#pragma once
// The CLI's dataset tools for Python (stoker.convert, stoker.inspect, stoker.verify): the
// importers of store/import/, the summary of `stoker inspect --json` and the record checks of
// `stoker verify`. Each releases the GIL while it works; the long ones (an ImageFolder import,
// verifying) take it back every 100 ms to run Python's signal handlers, so Ctrl-C stops them
// (with nothing written by an import), and to report progress. Free functions; thread-safe.

#include <pybind11/pybind11.h>

namespace stoker::python {

// Adds import_idx, convert_fashion_mnist, import_cifar10, import_image_folder, inspect_json,
// verify_datasets and the Fashion-MNIST default paths to `module`.
void register_tools(pybind11::module_& module);

}  // namespace stoker::python
