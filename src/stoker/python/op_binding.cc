#include "stoker/python/op_binding.h"

#include <string>
#include <utility>
#include <vector>

namespace stoker::python {
namespace py = pybind11;
using namespace py::literals;

namespace {

// A Python value as the registry takes it: bool, int, float and a sequence of real numbers
// typed; a sequence of calls ({"op": name, ...}, a combinator's operations) as their text
// "[call;call]"; anything else as text (str as it is, other objects as their repr), which the
// registry reads as a command line's or names in its message.
ParamValue param_value(const py::handle value) {
  PyObject* object = value.ptr();
  if (PyBool_Check(object)) return value.cast<bool>();
  if (PyUnicode_Check(object)) return value.cast<std::string>();
  if (PyIndex_Check(object)) {  // int, numpy's integers
    const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(object));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    const long long i = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow == 0) return static_cast<int64_t>(i);
    return py::str(value).cast<std::string>();
  }
  if (PyFloat_Check(object) || PyObject_HasAttrString(object, "__float__"))
    return py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>();
  if (py::isinstance<py::sequence>(value) && py::len(value) > 0 &&
      py::isinstance<py::dict>(value[py::int_(0)])) {
    std::string calls;
    for (const py::handle item : py::reinterpret_borrow<py::sequence>(value)) {
      if (!py::isinstance<py::dict>(item)) return py::repr(value).cast<std::string>();
      calls += (calls.empty() ? "" : ";") + to_text(op_call_from(item.cast<py::dict>()));
    }
    return "[" + calls + "]";
  }
  if (py::isinstance<py::sequence>(value)) {
    std::vector<double> list;
    for (const py::handle item : py::reinterpret_borrow<py::sequence>(value)) {
      const ParamValue number = param_value(item);
      if (const auto* d = std::get_if<double>(&number)) {
        list.push_back(*d);
      } else if (const auto* i = std::get_if<int64_t>(&number)) {
        list.push_back(static_cast<double>(*i));
      } else {
        return py::repr(value).cast<std::string>();
      }
    }
    return list;
  }
  return py::repr(value).cast<std::string>();
}

}  // namespace

py::object from_json(const std::string& json) {
  return py::module_::import("json").attr("loads")(json);
}

std::vector<std::pair<std::string, ParamValue>> params_from(const py::dict& values,
                                                            const std::string& skip) {
  std::vector<std::pair<std::string, ParamValue>> given;
  for (const auto& [key, value] : values) {
    const auto name = key.cast<std::string>();
    if (name != skip) given.emplace_back(name, param_value(value));
  }
  return given;
}

OpCall op_call_from(const py::dict& spec) {
  return make_op_call(spec["op"].cast<std::string>(), params_from(spec, "op")).value_or_throw();
}

void register_operations(py::module_& module) {
  module.def(
      "operations", [] { return from_json(operations_json()); },
      "The operations a field can be made with: [{name, role, doc, python_class, params: "
      "[{name, type, default, doc, min, max, min_open, min_count, max_count}]}] "
      "(pipeline/op_registry.h)");
  module.def(
      "check_operation",
      [](const std::string& name, const py::dict& params) {
        py::dict spec = params;
        spec["op"] = name;
        return from_json(params_json(op_call_from(spec)));
      },
      "name"_a, "params"_a,
      "The operation's parameters checked, typed and completed with their defaults; ValueError "
      "with the registry's message (the CLI's --augment says the same)");
}

}  // namespace stoker::python
