#pragma once
// What stoker.write_dataset needs to store encoded images as `stoker convert imagefolder` does
// (store/image_record.h): the image record's fields, and an encoded image's format, size and
// checksum, optionally checked by decoding it whole, which also gives the pixel statistics of
// the manifest (store/channel_statistics.h). An image's statistics cross into Python (and from
// worker processes to the writer) as a tuple of ints (pixels, sums, squares): its pixel count
// and, per RGB channel, the sums of the values and of their squares. Free functions;
// thread-safe (they release the GIL while reading an image).

#include <pybind11/pybind11.h>

#include "stoker/image/decode.h"
#include "stoker/store/channel_statistics.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker::python {

// Decodes the JPEG or PNG in `bytes` whole to RGB (PIL's convert("RGB") pixels) in `scratch`:
// the check of all of its data, and its pixels' statistics. Needs no GIL.
Result<ChannelStatistics> decoded_statistics(ByteSpan bytes, image::DecodeBuffer& scratch);

// An image's statistics as Python's (pixels, sums, squares) tuple.
pybind11::tuple statistics_to_python(const ChannelStatistics& stats);

// The statistics of one RGB image from a (pixels, sums, squares) tuple; raises ValueError saying
// what is wrong with it (one line).
ChannelStatistics statistics_from_python(pybind11::handle value);

// Adds stoker._stoker.image_record_fields() and stoker._stoker.image_info(data, check) to
// `module`.
void register_image(pybind11::module_& module);

}  // namespace stoker::python
