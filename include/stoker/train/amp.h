#pragma once
// Automatic mixed precision: an RAII autocast scope (bf16 on the CPU, fp16 on CUDA) and dynamic
// loss scaling for fp16, written with plain tensor ops so it runs on every device.

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/util/enum_names.h"
#include "stoker/util/status.h"

namespace stoker {

enum class AmpMode { kOff, kBf16, kFp16 };

inline constexpr auto kAmpModeNames = enum_names<AmpMode>(
    {{AmpMode::kOff, "off"}, {AmpMode::kBf16, "bf16"}, {AmpMode::kFp16, "fp16"}});

// "off", "bf16" or "fp16"; anything else is kInvalidArgument.
Result<AmpMode> parse_amp_mode(const std::string& name);
// The inverse of parse_amp_mode.
std::string to_string(AmpMode mode);

// Sets the calling thread's autocast state for `device` for the guard's lifetime: enabled with
// bf16 or fp16 compute for kBf16/kFp16, disabled for kOff. The destructor restores the previous
// state (so guards nest) and clears the autocast cast cache when the outermost guard exits.
// fp16 needs CUDA: kFp16 on the CPU throws Error. Construct and destroy on the same thread;
// not copyable or movable.
class AutocastGuard {
 public:
  explicit AutocastGuard(AmpMode mode, c10::DeviceType device = c10::kCPU);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool previous_enabled_;
  c10::ScalarType previous_dtype_;
};

// Loss-scaling parameters (PyTorch GradScaler's defaults).
struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;  // consecutive good steps before the scale grows
};

// What a checkpoint needs to resume loss scaling.
struct LossScalerState {
  double scale = 1.0;
  int64_t good_steps = 0;  // consecutive steps without inf/NaN gradients since the last change
};

// Dynamic loss scaling for fp16 training. Per step: backward(scale(loss)); found_inf =
// !unscale_and_check(params); if (!found_inf) optimizer.step(); update(found_inf). Enabled only
// for AmpMode::kFp16; otherwise a pass-through with scale 1 that never reports inf.
// Not thread-safe.
class LossScaler {
 public:
  explicit LossScaler(AmpMode mode, LossScalerOptions options = {});

  bool enabled() const { return enabled_; }
  // The current scale (1 when disabled).
  double current_scale() const { return scale_; }
  // loss * current_scale() (the loss itself when disabled).
  at::Tensor scale(const at::Tensor& loss) const;
  // Divides every defined gradient of `params` in place by current_scale() and returns true if
  // all of them are finite afterwards. Call once per step, after backward. Disabled: returns
  // true without touching or inspecting the gradients.
  bool unscale_and_check(const std::vector<at::Tensor>& params) const;
  // Adjusts the scale after a step: on inf/NaN it is multiplied by backoff_factor (the caller
  // skips that step); after growth_interval consecutive good steps by growth_factor (unless that
  // would overflow). No-op when disabled.
  void update(bool found_inf);

  LossScalerState state() const { return {scale_, good_steps_}; }
  // Restores a state(); kInvalidArgument if the scale is not finite and > 0 or good_steps < 0.
  // Ignored (ok) when disabled.
  Status load_state(const LossScalerState& state);

 private:
  bool enabled_;
  LossScalerOptions options_;
  double scale_;
  int64_t good_steps_ = 0;
};

}  // namespace stoker
