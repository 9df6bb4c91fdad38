#pragma once
// The EXIF orientation of a JPEG (tag 0x0112 of its Exif segment's first IFD), as PIL reads it
// for ImageOps.exif_transpose (Hugging Face datasets' Image feature applies it; stoker's decode
// does not, as PIL's Image.open does not): the first APP1 segment starting "Exif\0\0", its TIFF
// header (either byte order), its first IFD's entries. Read from the bytes before the first scan
// only, bounds-checked: untrusted input (fuzz/image_decode_fuzz.cc). Stateless.

#include "stoker/util/byte_span.h"

namespace stoker::image {

// The orientation that JPEG `jpeg` (its bytes from SOI) names: 1 to 8 as its tag holds it, 0
// where it has no Exif segment or no orientation tag, -1 where its Exif segment cannot be read
// (truncated, or its first IFD outside it).
int jpeg_exif_orientation(ByteSpan jpeg);

}  // namespace stoker::image
