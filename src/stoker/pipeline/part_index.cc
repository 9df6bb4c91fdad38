#include "stoker/pipeline/part_index.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace stoker {
namespace {

class PartIndex : public Transform {
 public:
  explicit PartIndex(std::vector<uint64_t> starts) : starts_(std::move(starts)) {}
  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override { return {}; }
  Status apply(const SampleInput& input, uint8_t* slot) const override {
    const auto after =
        std::upper_bound(starts_.begin(), starts_.end(), static_cast<uint64_t>(input.index));
    const int64_t part = static_cast<int64_t>(after - starts_.begin()) - 1;
    std::memcpy(slot, &part, sizeof part);
    return Status::ok();
  }

 private:
  const std::vector<uint64_t> starts_;
};

}  // namespace

std::shared_ptr<const Transform> part_index_transform(std::vector<uint64_t> part_starts) {
  return std::make_shared<PartIndex>(std::move(part_starts));
}

}  // namespace stoker
