#include "stoker/python/dlpack_export.h"

#include <dlpack/dlpack.h>

#include <vector>

namespace stoker::python {
namespace py = pybind11;

namespace {

constexpr const char* kCapsuleName = "dltensor";

// The DLManagedTensor and what it points to; manager_ctx points back to this.
struct Exported {
  DLManagedTensor managed{};
  std::vector<int64_t> dims;  // the shape, then the strides: one allocation
  std::shared_ptr<const void> owner;
};

void delete_exported(DLManagedTensor* managed) {
  delete static_cast<Exported*>(managed->manager_ctx);
}

// The capsule's destructor: frees the tensor unless a consumer took it over.
void delete_unconsumed(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;  // renamed "used_dltensor": consumed
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  managed->deleter(managed);
}

DLDataType dl_dtype(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return {kDLUInt, 8, 1};
    case DType::kInt64:
      return {kDLInt, 64, 1};
    case DType::kFloat32:
      return {kDLFloat, 32, 1};
    case DType::kBytes:
      break;
  }
  throw Error(invalid_argument("bytes fields have no DLPack type"));
}

}  // namespace

py::capsule to_dlpack(const HostField& field, std::shared_ptr<const void> owner) {
  auto exported = std::make_unique<Exported>();
  const size_t ndim = field.shape.size();
  exported->dims.reserve(2 * ndim);
  exported->dims.assign(field.shape.begin(), field.shape.end());
  exported->dims.insert(exported->dims.end(), field.strides.begin(), field.strides.end());
  exported->owner = std::move(owner);
  DLTensor& t = exported->managed.dl_tensor;
  t.data = field.data;
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int>(ndim);
  t.dtype = dl_dtype(field.dtype);
  t.shape = exported->dims.data();
  t.strides = exported->dims.data() + ndim;
  t.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = delete_exported;
  PyObject* capsule = PyCapsule_New(&exported->managed, kCapsuleName, delete_unconsumed);
  if (!capsule) throw py::error_already_set();
  exported.release();  // the capsule owns it now
  return py::reinterpret_steal<py::capsule>(capsule);
}

}  // namespace stoker::python
