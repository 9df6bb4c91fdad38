#include "stoker/store/image_record.h"

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

}  // namespace stoker
