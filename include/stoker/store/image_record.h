#pragma once
// The records of an image dataset (`stoker convert imagefolder`; docs/FORMAT.md, "Image
// datasets"). One record per image, fields in this order:
//   image              bytes   the stored JPEG or PNG (a JPEG transcoded for crops, or as imported)
//   label              int64   the class index (the manifest's class_names)
//   height, width      int64   of the stored image: a transform sizes its crop from these fixed
//                              fields without parsing the image
//   original_size      int64   bytes of the imported file
//   original_checksum  int64   XXH3-64 (seed 0) of the imported file, its 64 bits as an int64

#include <cstdint>
#include <vector>

#include "stoker/store/record_encoder.h"
#include "stoker/store/schema.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

// The schema above.
Schema image_record_schema();

// Where the image record's fields are in a schema. Plain value; thread-safe to share.
struct ImageRecordFields {
  int image = -1;
  int label = -1;
  int height = -1;
  int width = -1;
  int original_size = -1;
  int original_checksum = -1;

  // The fields of `schema`, found by name; kInvalidArgument naming the first field that is
  // missing or of another type (the image must be bytes, the others int64 scalars).
  static Result<ImageRecordFields> find(const Schema& schema);
};

// One image record's values: the stored image, its size, its label and the file it came from.
struct ImageRecordValues {
  ByteSpan stored;  // the image field
  int64_t label = 0;
  int64_t height = 0;  // of the stored image
  int64_t width = 0;
  ByteSpan original;  // the imported file: original_size and original_checksum are its
};

// Sets the image record's fields `fields` of `encoder` to `values` (a schema with more fields
// has the rest set by the caller); the stored image at most shard_format::kMaxPayloadBytes
// (kInvalidArgument otherwise).
Status set_image_record(RecordEncoder& encoder, const ImageRecordFields& fields,
                        const ImageRecordValues& values);

// The bytes of the record of `values` in `schema`, whose fields are `fields` and no others
// (set_image_record's errors).
Result<std::vector<uint8_t>> encode_image_record(const Schema& schema,
                                                 const ImageRecordFields& fields,
                                                 const ImageRecordValues& values);

}  // namespace stoker
