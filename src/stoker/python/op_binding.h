#pragma once
// The operation registry's binding (pipeline/op_registry.h): _stoker.operations(), its
// description, and _stoker.check_operation(name, params), one call checked as the CLI checks
// `--augment`. python/stoker/transforms.py builds its classes and checks on them, and the loader
// binding makes its fields from the same calls. Needs the GIL.

#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "stoker/pipeline/op_registry.h"

namespace stoker::python {

// Adds operations() and check_operation() to `module`.
void register_operations(pybind11::module_& module);

// The call a spec {"op": NAME, PARAM: value, ...} makes; raises ValueError with the registry's
// message.
OpCall op_call_from(const pybind11::dict& spec);

// The items of `values` as a registry's parameters (an operation's, a source's), `skip`'s left
// out: bool, int, float and sequences of numbers typed, sequences of calls as their text, the
// rest as text the registry reads or names.
std::vector<std::pair<std::string, ParamValue>> params_from(const pybind11::dict& values,
                                                            const std::string& skip = "");

// JSON text as Python objects.
pybind11::object from_json(const std::string& json);

}  // namespace stoker::python
