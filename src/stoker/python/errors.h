#pragma once
// How stoker's errors become Python exceptions: stoker::Error by its status code (a bad
// argument is a ValueError, a missing file a FileNotFoundError, an existing output a
// FileExistsError, a stop on request KeyboardInterrupt, anything else stoker.Error, a
// RuntimeError), always with the one-line message.

#include <pybind11/pybind11.h>

namespace stoker::python {

// Adds stoker.Error to `module` and registers the translation of stoker::Error.
void register_errors(pybind11::module_& module);

}  // namespace stoker::python
