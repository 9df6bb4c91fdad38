#pragma once
// The native half of stoker.DatasetWriter: stoker._stoker.DatasetWriter, a DatasetWriter (the
// crash-safe staging of store/dataset_writer.h) with a RecordEncoder. append() takes a dict of
// field values, checks each against the schema (dtype, shape, missing and unknown fields) and
// raises ValueError naming the sample and the field; arrays are read through the buffer
// protocol without a copy when C-contiguous, anything else through numpy.asarray. Not
// thread-safe: a second thread calling while one is inside raises RuntimeError.

#include <pybind11/pybind11.h>

namespace stoker::python {

// Adds stoker._stoker.DatasetWriter to `module`.
void register_writer(pybind11::module_& module);

}  // namespace stoker::python
