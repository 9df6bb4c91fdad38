#include "stoker/python/errors.h"

#include <Python.h>

#include "stoker/python/py_text.h"
#include "stoker/util/status.h"

namespace stoker::python {
namespace py = pybind11;

namespace {

// The Python exception class for a status code; `fallback` is stoker.Error.
PyObject* exception_for(StatusCode code, PyObject* fallback) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNoRoom:  // its remedy is a setting too (a larger budget)
      return PyExc_ValueError;
    case StatusCode::kNotFound:
      return PyExc_FileNotFoundError;
    case StatusCode::kAlreadyExists:
      return PyExc_FileExistsError;
    case StatusCode::kCancelled:
      return PyExc_KeyboardInterrupt;
    default:
      return fallback;
  }
}

}  // namespace

void register_errors(py::module_& module) {
  static py::exception<Error> error(module, "Error", PyExc_RuntimeError);
  error.doc() = "A stoker failure: corrupt data, an I/O error, an unsupported format.";
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& e) {
      // A message may hold a file name's bytes that are not UTF-8: shown as \xNN.
      PyErr_SetObject(exception_for(e.status().code(), error.ptr()), message_str(e.what()).ptr());
    }
  });
}

}  // namespace stoker::python
