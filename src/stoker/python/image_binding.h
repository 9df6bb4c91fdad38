#pragma once
// What stoker.write_dataset needs to store encoded images as `stoker convert imagefolder` does
// (store/image_record.h): the image record's fields, and an encoded image's format, size and
// checksum, optionally checked by decoding it whole. Free functions; thread-safe (they release
// the GIL while reading an image).

#include <pybind11/pybind11.h>

namespace stoker::python {

// Adds stoker._stoker.image_record_fields() and stoker._stoker.image_info(data, check) to
// `module`.
void register_image(pybind11::module_& module);

}  // namespace stoker::python
