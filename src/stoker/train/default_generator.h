#pragma once
// LibTorch's default CPU generator: the process-wide random stream that a model's
// initialisation and random layers (dropout) draw from. Read and set under its mutex; the
// trainer seeds it for the model's initialisation only (ScopedSeed), and checkpoints keep its
// state.

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace stoker {

// The default CPU generator's state (a uint8 tensor; a copy).
at::Tensor default_generator_state();
// Sets the default CPU generator's state to `state` (from default_generator_state()). Throws
// c10::Error if `state` is not a generator state.
void set_default_generator_state(const at::Tensor& state);

// Seeds the default CPU generator with `seed` for its lifetime, then puts back the state it had:
// what is drawn in the scope is a function of the seed alone, and the caller's stream continues
// as if nothing had drawn from it. Not thread-safe: another thread drawing from the default
// generator during the scope draws from the seeded stream.
class ScopedSeed {
 public:
  explicit ScopedSeed(uint64_t seed);
  ~ScopedSeed();
  ScopedSeed(const ScopedSeed&) = delete;
  ScopedSeed& operator=(const ScopedSeed&) = delete;

 private:
  at::Tensor saved_;
};

}  // namespace stoker
