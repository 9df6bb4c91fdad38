#include "stoker/store/image_record.h"

#include "stoker/util/checksum.h"

namespace stoker {
namespace {

constexpr const char* kScalars[] = {"label", "height", "width", "original_size",
                                    "original_checksum"};

}  // namespace

Schema image_record_schema() {
  std::vector<Field> fields = {{"image", DType::kBytes, {}}};
  for (const char* name : kScalars) fields.push_back({name, DType::kInt64, {}});
  // Valid by construction: distinct plain names, scalars.
  return std::move(Schema::create(std::move(fields))).value();
}

Result<ImageRecordFields> ImageRecordFields::find(const Schema& schema) {
  ImageRecordFields found;
  found.image = schema.find("image");
  if (found.image < 0 || schema.fields()[found.image].dtype != DType::kBytes)
    return invalid_argument("not an image dataset: no bytes field 'image'");
  int* const scalars[] = {&found.label, &found.height, &found.width, &found.original_size,
                          &found.original_checksum};
  for (size_t i = 0; i < std::size(kScalars); ++i) {
    const int f = schema.find(kScalars[i]);
    if (f < 0 || schema.fields()[f].dtype != DType::kInt64 || !schema.fields()[f].shape.empty() ||
        !schema.fields()[f].is_fixed())
      return invalid_argument(std::string("not an image dataset: no int64 scalar field '") +
                              kScalars[i] + "'");
    *scalars[i] = f;
  }
  return found;
}

Status set_image_record(RecordEncoder& encoder, const ImageRecordFields& fields,
                        const ImageRecordValues& values) {
  const int64_t scalars[][2] = {
      {fields.label, values.label},
      {fields.height, values.height},
      {fields.width, values.width},
      {fields.original_size, static_cast<int64_t>(values.original.size)},
      {fields.original_checksum,
       static_cast<int64_t>(xxh3_64(values.original.data, values.original.size))}};
  for (const auto& [field, value] : scalars)
    STOKER_RETURN_IF_ERROR(encoder.set_fixed(static_cast<int>(field), &value, sizeof value));
  return encoder.set_bytes(fields.image, values.stored.data, values.stored.size);
}

Result<std::vector<uint8_t>> encode_image_record(const Schema& schema,
                                                 const ImageRecordFields& fields,
                                                 const ImageRecordValues& values) {
  RecordEncoder encoder(schema);
  STOKER_RETURN_IF_ERROR(set_image_record(encoder, fields, values));
  return encoder.encode();
}

}  // namespace stoker
