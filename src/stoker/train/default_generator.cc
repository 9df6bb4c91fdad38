#include "stoker/train/default_generator.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

namespace stoker {

at::Tensor default_generator_state() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_default_generator_state(const at::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

ScopedSeed::ScopedSeed(uint64_t seed) : saved_(default_generator_state()) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_current_seed(seed);
}

ScopedSeed::~ScopedSeed() { set_default_generator_state(saved_); }

}  // namespace stoker
