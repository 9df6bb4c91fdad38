#include "stoker/python/writer_binding.h"

#include <Python.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "stoker/python/busy_scope.h"
#include "stoker/python/image_binding.h"
#include "stoker/python/py_text.h"
#include "stoker/python/released_gil.h"
#include "stoker/store/dataset_writer.h"
#include "stoker/store/image_record.h"
#include "stoker/store/record_encoder.h"
#include "stoker/store/schema.h"
#include "stoker/store/shard_format.h"

namespace stoker::python {
namespace py = pybind11;

namespace {

// Records of at least this many bytes are encoded and written with the GIL released. Smaller
// ones keep it: getting it back after releasing it waits up to the interpreter's switch
// interval (5 ms) while other threads run Python, far longer than copying a small record.
constexpr size_t kReleaseGilBytes = size_t{256} << 10;
// The decode buffer is dropped once an image grew it past this, not kept for the writer's life.
constexpr size_t kKeepScratchBytes = size_t{64} << 20;

// A dimension of a shape as Python gives it: a size, or the name of a variable-length field's
// leading dimension.
using Dim = std::variant<int64_t, std::string>;
// A field as the constructor takes it: name, dtype name, shape.
using FieldSpec = std::tuple<std::string, std::string, std::vector<Dim>>;

// "(1, 28, 28)", "(5,)", "()": a shape as Python prints a tuple.
template <typename Dim>
std::string shape_text(const Dim* dims, size_t ndim) {
  std::string text = "(";
  for (size_t i = 0; i < ndim; ++i) text += (i > 0 ? ", " : "") + std::to_string(dims[i]);
  return text + (ndim == 1 ? ",)" : ")");
}

// numpy's name of a buffer's element type ("uint8", "float64", ...), from its struct-module
// format; the format itself if it is not one number in this machine's (little-endian) order.
std::string element_type(const Py_buffer& view) {
  const char* format = view.format != nullptr ? view.format : "B";
  std::string_view code = format;
  if (!code.empty() && (code[0] == '@' || code[0] == '=' || code[0] == '<')) code.remove_prefix(1);
  if (code.size() == 1) {
    const std::string bits = std::to_string(8 * view.itemsize);
    if (std::string_view("bhilqn").find(code[0]) != std::string_view::npos) return "int" + bits;
    if (std::string_view("BHILQN").find(code[0]) != std::string_view::npos) return "uint" + bits;
    if (std::string_view("efd").find(code[0]) != std::string_view::npos) return "float" + bits;
    if (code[0] == '?') return "bool";
  }
  return format;
}

std::string type_name(PyObject* value) { return Py_TYPE(value)->tp_name; }

// One field's value for the encoder: `size` bytes at `data`, kept alive until release().
struct FieldValue {
  Py_buffer view{};
  bool has_view = false;
  py::object owner;           // an array numpy.asarray made of the value
  std::vector<uint8_t> copy;  // a strided array made C-contiguous
  alignas(8) uint8_t scalar[8] = {};
  const void* data = nullptr;
  size_t size = 0;
  uint64_t rows = 0;  // of a variable-length field

  FieldValue() = default;
  FieldValue(const FieldValue&) = delete;
  FieldValue& operator=(const FieldValue&) = delete;
  ~FieldValue() { release(); }

  // Lets go of the value's buffer; needs the GIL.
  void release() {
    if (has_view) PyBuffer_Release(&view);
    has_view = false;
    owner = py::object();
  }
  // Reads the buffer of `object` (strides and format); false, with no Python error left, if it
  // has none.
  bool get_buffer(PyObject* object) {
    if (PyObject_GetBuffer(object, &view, PyBUF_RECORDS_RO) != 0) {
      PyErr_Clear();
      return false;
    }
    has_view = true;
    if (PyBuffer_IsContiguous(&view, 'C')) {
      data = view.buf;
    } else {
      copy.resize(static_cast<size_t>(view.len));
      if (PyBuffer_ToContiguous(copy.data(), &view, view.len, 'C') != 0)
        throw py::error_already_set();
      data = copy.data();
    }
    size = static_cast<size_t>(view.len);
    return true;
  }
};

constexpr const char* kWriterBusy =
    "stoker.DatasetWriter is in use by another thread: one writer takes one thread at a time";

Schema make_schema(const std::vector<FieldSpec>& specs) {
  std::vector<Field> fields;
  for (const auto& [name, dtype_name, shape] : specs) {
    const std::optional<DType> dtype = dtype_from_name(dtype_name);
    if (!dtype)
      throw Error(invalid_argument("schema field '" + name + "': unknown dtype '" + dtype_name +
                                   "' (uint8, int64, float32 or bytes)"));
    Field field(name, *dtype);
    for (size_t d = 0; d < shape.size(); ++d) {
      if (const auto* size = std::get_if<int64_t>(&shape[d])) {
        field.shape.push_back(*size);
      } else if (d == 0) {
        field.length_dim = std::get<std::string>(shape[d]);
        if (field.length_dim.empty())
          throw Error(invalid_argument("schema field '" + name + "': empty dimension name"));
      } else {
        throw Error(invalid_argument("schema field '" + name +
                                     "': only the first dimension may be a name"));
      }
    }
    fields.push_back(std::move(field));
  }
  return Schema::create(std::move(fields)).value_or_throw();
}

class NativeDatasetWriter {
 public:
  NativeDatasetWriter(const std::string& out, const std::vector<FieldSpec>& fields,
                      uint64_t shard_bytes, std::string source,
                      std::vector<std::string> class_names, bool image_statistics)
      : out_(out), schema_(make_schema(fields)), encoder_(schema_), values_(fields.size()) {
    if (shard_bytes == 0) throw Error(invalid_argument("shard_bytes must be at least 1"));
    if (const Result<ImageRecordFields> image = ImageRecordFields::find(schema_);
        image.is_ok() && image_statistics)
      image_field_ = image.value().image;
    for (const Field& field : schema_.fields()) names_.push_back(py::str(field.name));
    asarray_ = py::module_::import("numpy").attr("asarray");
    DatasetWriterOptions options;
    options.shard_bytes = shard_bytes;
    options.source = std::move(source);
    options.class_names = std::move(class_names);
    writer_ = DatasetWriter::create(out, schema_, std::move(options)).value_or_throw();
  }
  NativeDatasetWriter(const NativeDatasetWriter&) = delete;
  NativeDatasetWriter& operator=(const NativeDatasetWriter&) = delete;

  void append(py::handle sample, py::handle statistics) {
    BusyScope busy(busy_, kWriterBusy);
    check_open();
    const uint64_t index = records_;
    if (!PyDict_Check(sample.ptr()))
      throw py::type_error("sample " + std::to_string(index) + " is a " + type_name(sample.ptr()) +
                           ", not a dict of field values");
    // The values hold their buffers until the record is written, then let go of them.
    struct Release {
      std::vector<FieldValue>& values;
      ~Release() {
        for (FieldValue& v : values) v.release();
      }
    } release{values_};
    size_t bytes = schema_.fixed_bytes();
    for (size_t f = 0; f < values_.size(); ++f) {
      PyObject* value = PyDict_GetItemWithError(sample.ptr(), names_[f].ptr());
      if (value == nullptr) {
        if (PyErr_Occurred()) throw py::error_already_set();
        throw py::value_error("sample " + std::to_string(index) + " has no field '" +
                              schema_.fields()[f].name + "'");
      }
      read_value(static_cast<int>(f), value, index);
      if (!schema_.fields()[f].is_fixed()) bytes += values_[f].size;
    }
    if (static_cast<size_t>(PyDict_Size(sample.ptr())) > values_.size())
      throw py::value_error(unknown_field(sample, index));
    check_shared_rows(index);
    std::optional<ChannelStatistics> pixels = given_statistics(statistics, index);
    const bool decode = image_field_ >= 0 && !pixels;
    Status status;
    {
      std::optional<ReleasedGil> no_gil;
      if (decode || bytes >= kReleaseGilBytes) no_gil.emplace();
      if (decode) {
        const FieldValue& image = values_[image_field_];
        Result<ChannelStatistics> decoded =
            decoded_statistics({static_cast<const uint8_t*>(image.data), image.size}, scratch_);
        if (scratch_.capacity() > kKeepScratchBytes) scratch_ = image::DecodeBuffer();
        if (!decoded.is_ok()) {
          // A bad image is a bad value: the sample is not written, the writer stays usable.
          throw Error(Status(decoded.status().code(),
                             where(index, image_field_) + decoded.status().message()));
        }
        pixels = std::move(decoded).value();
      }
      status = write_record();
      if (status.is_ok() && pixels) status = writer_->add_decoded_statistics(image_field_, *pixels);
    }
    if (!status.is_ok()) {
      writer_.reset();  // removes the staging directory: nothing half-written stays
      throw Error(status);
    }
    ++records_;
  }

  void finish() {
    BusyScope busy(busy_, kWriterBusy);
    check_open();
    Status status;
    {
      ReleasedGil no_gil;
      status = writer_->finish();
    }
    if (!status.is_ok()) {
      writer_.reset();
      throw Error(status);
    }
    finished_ = true;
  }

  void abort() {
    BusyScope busy(busy_, kWriterBusy);
    if (finished_) return;
    ReleasedGil no_gil;
    writer_.reset();
  }

  py::str out() const { return fs_str(out_); }
  uint64_t records() const { return records_; }
  bool finished() const { return finished_; }
  bool open() const { return writer_ != nullptr && !finished_; }
  std::vector<FieldSpec> fields() const {
    std::vector<FieldSpec> specs;
    for (const Field& f : schema_.fields()) {
      std::vector<Dim> shape;
      if (f.is_variable_length()) shape.emplace_back(f.length_dim);
      shape.insert(shape.end(), f.shape.begin(), f.shape.end());
      specs.emplace_back(f.name, dtype_name(f.dtype), std::move(shape));
    }
    return specs;
  }

 private:
  void check_open() const {
    if (finished_) throw py::value_error(out_ + ": the dataset writer has finished");
    if (!writer_) throw py::value_error(out_ + ": the dataset writer was aborted");
  }

  // "sample 3, field 'image': "
  std::string where(uint64_t index, int field) const {
    return "sample " + std::to_string(index) + ", field '" + schema_.fields()[field].name + "': ";
  }

  // Fills values_[field] from `value`, or raises ValueError saying what is wrong with it.
  void read_value(int field, PyObject* value, uint64_t index) {
    const Field& f = schema_.fields()[field];
    if (f.dtype == DType::kBytes) return read_bytes(field, value, index);
    if (f.shape.empty() && f.is_fixed()) return read_scalar(field, value, index);
    FieldValue& v = values_[field];
    py::object array = py::reinterpret_borrow<py::object>(value);
    if (!PyObject_CheckBuffer(value)) {
      try {
        array = asarray_(array);
      } catch (py::error_already_set& e) {
        throw py::value_error(where(index, field) + type_name(value) +
                              " is not an array: " + e.what());
      }
    }
    v.owner = array;
    if (!v.get_buffer(array.ptr()))
      throw py::value_error(where(index, field) + type_name(value) + " is not an array");
    const std::string type = element_type(v.view);
    // A variable-length field's value has one dimension more: its rows, any number.
    const size_t leading = f.is_variable_length() ? 1 : 0;
    const bool same_shape =
        static_cast<size_t>(v.view.ndim) == leading + f.shape.size() &&
        std::equal(f.shape.begin(), f.shape.end(), v.view.shape + leading,
                   [](int64_t a, Py_ssize_t b) { return a == static_cast<int64_t>(b); });
    if (type != dtype_name(f.dtype) || !same_shape) {
      std::string expected = shape_text(f.shape.data(), f.shape.size());
      if (f.is_variable_length()) {  // "(N, 4)", "(N,)"
        expected = "(" + f.length_dim + (f.shape.empty() ? "," : "");
        for (int64_t d : f.shape) expected += ", " + std::to_string(d);
        expected += ")";
      }
      throw py::value_error(where(index, field) + type + " array of shape " +
                            shape_text(v.view.shape, static_cast<size_t>(v.view.ndim)) +
                            ", the schema says " + dtype_name(f.dtype) + " " + expected);
    }
    if (f.is_variable_length()) {
      v.rows = static_cast<uint64_t>(v.view.shape[0]);
      if (v.size > shard_format::kMaxPayloadBytes)
        throw py::value_error(where(index, field) + std::to_string(v.rows) + " rows take " +
                              std::to_string(v.size) + " bytes, more than a field holds (" +
                              std::to_string(shard_format::kMaxPayloadBytes) + ")");
    }
  }

  // ValueError if two variable-length fields of the sample read into values_ that share a
  // dimension have different numbers of rows.
  void check_shared_rows(uint64_t index) const {
    const std::vector<Field>& fields = schema_.fields();
    for (size_t f = 0; f < fields.size(); ++f) {
      if (!fields[f].is_variable_length()) continue;
      for (size_t g = 0; g < f; ++g) {
        if (fields[g].length_dim != fields[f].length_dim || values_[g].rows == values_[f].rows)
          continue;
        throw py::value_error(where(index, static_cast<int>(f)) + std::to_string(values_[f].rows) +
                              " rows, but field '" + fields[g].name +
                              "', which shares dimension '" + fields[f].length_dim + "', has " +
                              std::to_string(values_[g].rows));
      }
    }
  }

  // A scalar field: an integer (anything with __index__) for uint8 and int64, a number (anything
  // with __float__) for float32.
  void read_scalar(int field, PyObject* value, uint64_t index) {
    const Field& f = schema_.fields()[field];
    FieldValue& v = values_[field];
    v.data = v.scalar;
    v.size = f.fixed_bytes();
    if (f.dtype == DType::kFloat32) {
      const double number = PyFloat_AsDouble(value);
      if (number == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        throw py::value_error(where(index, field) + "a float32 scalar takes a number, got " +
                              type_name(value));
      }
      const float single = static_cast<float>(number);
      std::memcpy(v.scalar, &single, sizeof single);
      return;
    }
    const py::object integer = py::reinterpret_steal<py::object>(PyNumber_Index(value));
    if (!integer) {
      PyErr_Clear();
      throw py::value_error(where(index, field) + "an " + dtype_name(f.dtype) +
                            " scalar takes an integer, got " + type_name(value));
    }
    int overflow = 0;
    const long long number = PyLong_AsLongLongAndOverflow(integer.ptr(), &overflow);
    const bool fits = overflow == 0 && !(number == -1 && PyErr_Occurred()) &&
                      (f.dtype == DType::kInt64 || (number >= 0 && number <= 255));
    if (!fits) {
      PyErr_Clear();
      throw py::value_error(where(index, field) + py::str(integer).cast<std::string>() +
                            " is out of " + dtype_name(f.dtype) + "'s range");
    }
    if (f.dtype == DType::kInt64) {
      const int64_t wide = number;
      std::memcpy(v.scalar, &wide, sizeof wide);
    } else {
      v.scalar[0] = static_cast<uint8_t>(number);
    }
  }

  // A bytes field: bytes, bytearray, memoryview or a one-dimensional array of bytes.
  void read_bytes(int field, PyObject* value, uint64_t index) {
    FieldValue& v = values_[field];
    if (PyUnicode_Check(value))
      throw py::value_error(where(index, field) + "a bytes field takes bytes, got str");
    if (!v.get_buffer(value))
      throw py::value_error(where(index, field) + "a bytes field takes bytes, got " +
                            type_name(value));
    if (v.view.itemsize != 1 || v.view.ndim > 1)
      throw py::value_error(where(index, field) + "a bytes field takes bytes or a 1-D uint8 " +
                            "array, got a " + element_type(v.view) + " array of shape " +
                            shape_text(v.view.shape, static_cast<size_t>(v.view.ndim)));
    if (v.size > shard_format::kMaxPayloadBytes)
      throw py::value_error(where(index, field) + std::to_string(v.size) +
                            " bytes, more than a bytes field holds (" +
                            std::to_string(shard_format::kMaxPayloadBytes) + ")");
  }

  // "sample 3 has a field 'x' the schema does not (image, label)"
  std::string unknown_field(py::handle sample, uint64_t index) const {
    std::string known;
    for (const Field& f : schema_.fields()) known += (known.empty() ? "" : ", ") + f.name;
    for (const auto& item : py::reinterpret_borrow<py::dict>(sample)) {
      const std::string key = py::str(item.first).cast<std::string>();
      if (!py::isinstance<py::str>(item.first) || schema_.find(key) < 0)
        return "sample " + std::to_string(index) + " has a field " +
               py::repr(item.first).cast<std::string>() + " the schema does not have (" + known +
               ")";
    }
    return "sample " + std::to_string(index) + " has more fields than the schema";
  }

  // The image statistics `statistics` gives for sample `index` (None: none), or ValueError if
  // this writer keeps none or they are not an RGB image's.
  std::optional<ChannelStatistics> given_statistics(py::handle statistics, uint64_t index) const {
    if (statistics.is_none()) return std::nullopt;
    if (image_field_ < 0)
      throw py::value_error("sample " + std::to_string(index) +
                            ": statistics given, but this writer keeps none (they are for the "
                            "images of an image dataset, with image_statistics)");
    try {
      return statistics_from_python(statistics);
    } catch (const py::value_error& e) {
      throw py::value_error(where(index, image_field_) + e.what());
    }
  }

  // Encodes values_ into a record and appends it. Touches no Python object. The values were
  // checked: only the append can fail.
  Status write_record() {
    for (size_t f = 0; f < values_.size(); ++f) {
      const int field = static_cast<int>(f);
      const Field& spec = schema_.fields()[f];
      STOKER_RETURN_IF_ERROR(spec.is_fixed()
                                 ? encoder_.set_fixed(field, values_[f].data, values_[f].size)
                             : spec.is_variable_length()
                                 ? encoder_.set_rows(field, values_[f].data, values_[f].rows)
                                 : encoder_.set_bytes(field, values_[f].data, values_[f].size));
    }
    const std::vector<uint8_t>& record = encoder_.encode();
    return writer_->append(record.data(), record.size());
  }

  std::string out_;
  Schema schema_;
  RecordEncoder encoder_;  // over schema_
  std::vector<FieldValue> values_;
  std::vector<py::object> names_;          // the fields' names as Python str
  py::object asarray_;                     // numpy.asarray
  std::unique_ptr<DatasetWriter> writer_;  // null once aborted or failed
  int image_field_ = -1;         // the image dataset's image field whose statistics are kept, or -1
  image::DecodeBuffer scratch_;  // decodes images whose statistics append() is not given
  std::atomic<bool> busy_{false};
  uint64_t records_ = 0;
  bool finished_ = false;
};

}  // namespace

void register_writer(py::module_& module) {
  py::class_<NativeDatasetWriter>(module, "DatasetWriter",
                                  "Writes one dataset crash-safely (stoker.DatasetWriter wraps "
                                  "it). Not thread-safe: concurrent calls raise RuntimeError.")
      .def(py::init<const std::string&, const std::vector<FieldSpec>&, uint64_t, std::string,
                    std::vector<std::string>, bool>(),
           py::arg("out"), py::arg("fields"), py::kw_only(), py::arg("shard_bytes"),
           py::arg("source"), py::arg("class_names"), py::arg("image_statistics"),
           "`fields`: (name, dtype, shape) tuples, dtype uint8, int64, float32 or bytes; a shape "
           "starting with a str names the varying leading dimension of a variable-length "
           "field. With "
           "`image_statistics` and the image record's fields, the manifest gets the statistics "
           "of the images.")
      .def("append", &NativeDatasetWriter::append, py::arg("sample"), py::kw_only(),
           py::arg("statistics") = py::none(),
           "Appends a dict of field values as the next record. `statistics`: its image's "
           "(pixels, sums, squares) as image_info gives them; None: the image is decoded for "
           "them (image datasets with image_statistics).")
      .def("finish", &NativeDatasetWriter::finish,
           "Writes the manifest and moves the dataset into place.")
      .def("abort", &NativeDatasetWriter::abort,
           "Removes everything written so far (nothing, after finish()).")
      .def_property_readonly("out", &NativeDatasetWriter::out)
      .def_property_readonly("records", &NativeDatasetWriter::records)
      .def_property_readonly("finished", &NativeDatasetWriter::finished)
      .def_property_readonly("open", &NativeDatasetWriter::open)
      .def_property_readonly("fields", &NativeDatasetWriter::fields);
}

}  // namespace stoker::python
