#pragma once
// The EXIF orientation of a JPEG or PNG (tag 0x0112 of its Exif data's first IFD), as PIL reads
// it for ImageOps.exif_transpose (Hugging Face datasets' Image feature applies it; stoker's decode
// does not, as PIL's Image.open does not): a JPEG's first APP1 segment starting "Exif\0\0" before
// its first scan, a PNG's first eXIf chunk; its TIFF header (either byte order), its first IFD's
// entries. Bounds-checked: untrusted input (fuzz/image_decode_fuzz.cc). Stateless.

#include "stoker/util/byte_span.h"

namespace stoker::image {

// The orientation that the JPEG or PNG `image` (its bytes from its start) names: 1 to 8 as its
// tag holds it, 0 where it has no Exif data, no orientation tag or is neither format, -1 where
// its Exif data cannot be read (too short, or its first IFD outside it).
int exif_orientation(ByteSpan image);

}  // namespace stoker::image
