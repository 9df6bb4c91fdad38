#pragma once
// Text that comes from C++ as bytes, made Python str without a UnicodeDecodeError: file names
// (bytes on Linux, not necessarily UTF-8) as os.fsdecode gives them, so that os.fsencode gives
// the bytes back; and messages, with any byte that is not UTF-8 shown as \xNN. Both need the
// GIL.

#include <Python.h>
#include <pybind11/pybind11.h>

#include <string>

namespace stoker::python {

// The file name `name` as os.fsdecode(name) gives it (UTF-8 with surrogateescape).
inline pybind11::str fs_str(const std::string& name) {
  PyObject* text = PyUnicode_DecodeFSDefaultAndSize(name.data(), Py_ssize_t(name.size()));
  if (text == nullptr) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::str>(text);
}

// The message `text` as str, a byte that is not UTF-8 as \xNN.
inline pybind11::str message_str(const std::string& text) {
  PyObject* str = PyUnicode_DecodeUTF8(text.data(), Py_ssize_t(text.size()), "backslashreplace");
  if (str == nullptr) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::str>(str);
}

}  // namespace stoker::python
