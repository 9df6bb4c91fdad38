#pragma once
// The native half of stoker.DatasetWriter: stoker._stoker.DatasetWriter, a DatasetWriter (the
// crash-safe staging of store/dataset_writer.h) with a RecordEncoder. append() takes a dict of
// field values, checks each against the schema (dtype, shape, missing and unknown fields) and
// raises ValueError naming the sample and the field; arrays are read through the buffer
// protocol without a copy when C-contiguous, anything else through numpy.asarray. For an image
// dataset (the image record's fields, store/image_record.h) it keeps the pixel statistics of
// every image unless told not to: each append() takes them from its caller (a worker that
// decoded the image already) or decodes the image itself (which also checks it: a bad image
// raises stoker.Error naming the sample, and is not written), so that all records have them
// and finish() cannot fail on some lacking. Not thread-safe: a second thread calling while one
// is inside raises RuntimeError.

#include <pybind11/pybind11.h>

namespace stoker::python {

// Adds stoker._stoker.DatasetWriter to `module`.
void register_writer(pybind11::module_& module);

}  // namespace stoker::python
