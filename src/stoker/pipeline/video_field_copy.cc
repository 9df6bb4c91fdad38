#include "stoker/pipeline/video_field_copy.h"

#include <fmt/format.h>

#include <memory>

#include "stoker/store/record_view.h"
#include "stoker/util/cancel_scope.h"
#include "stoker/video/video_reference.h"

namespace stoker {
namespace {

class CopyVideoField : public VariableTransform {
 public:
  CopyVideoField(int field, int64_t max_length) : field_(field), max_length_(max_length) {}
  DType dtype() const override { return DType::kUint8; }
  std::vector<int64_t> sample_shape() const override { return {max_length_}; }
  Status apply_sized(const SampleInput& input, uint8_t* slot, int64_t* shape) const override {
    STOKER_ASSIGN_OR_RETURN(ByteSpan field, variable_field(*input.schema, input.record, field_));
    const CancelScope reads_end_when_cancelled(input.cancelled);
    // Named "": the record's, which the loader names.
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<video::VideoBytes> video,
                            video::video_field_bytes("", field));
    const uint64_t size = video->size();
    if (size > static_cast<uint64_t>(max_length_))
      return invalid_argument(fmt::format(
          "its video's {} bytes are more than raw_bytes' max_length {}", size, max_length_));
    STOKER_RETURN_IF_ERROR(video->read(0, slot, static_cast<size_t>(size)));
    shape[0] = static_cast<int64_t>(size);
    return Status::ok();
  }

 private:
  const int field_;
  const int64_t max_length_;
};

}  // namespace

std::shared_ptr<const Transform> copy_video_field(int field, int64_t max_length) {
  return std::make_shared<CopyVideoField>(field, max_length);
}

}  // namespace stoker
