#include "stoker/pipeline/sample_cost.h"

#include <cstring>

namespace stoker {
namespace {

class BusyWait : public Transform {
 public:
  explicit BusyWait(std::chrono::microseconds cost) : cost_(cost) {}
  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override { return {}; }
  Status apply(const SampleInput& input, uint8_t* slot) const override {
    const auto until = std::chrono::steady_clock::now() + cost_;
    while (std::chrono::steady_clock::now() < until) {
    }
    std::memcpy(slot, &input.index, sizeof input.index);
    return Status::ok();
  }

 private:
  const std::chrono::microseconds cost_;
};

}  // namespace

std::shared_ptr<const Transform> busy_wait_transform(std::chrono::microseconds per_sample) {
  return std::make_shared<BusyWait>(per_sample);
}

}  // namespace stoker
