#include "stoker/train/amp.h"

#include <ATen/autocast_mode.h>
#include <ATen/ops/isfinite.h>
#include <torch/version.h>

#include <cmath>

namespace stoker {
namespace {

// The autocast API was made device-generic in 2.4; older versions have per-device calls.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled(c10::DeviceType d) { return at::autocast::is_autocast_enabled(d); }
void set_autocast_enabled(c10::DeviceType d, bool on) { at::autocast::set_autocast_enabled(d, on); }
c10::ScalarType autocast_dtype(c10::DeviceType d) { return at::autocast::get_autocast_dtype(d); }
void set_autocast_dtype(c10::DeviceType d, c10::ScalarType t) {
  at::autocast::set_autocast_dtype(d, t);
}
#else
bool autocast_enabled(c10::DeviceType d) {
  return d == c10::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
}
void set_autocast_enabled(c10::DeviceType d, bool on) {
  if (d == c10::kCPU) {
    at::autocast::set_cpu_enabled(on);
  } else {
    at::autocast::set_enabled(on);
  }
}
c10::ScalarType autocast_dtype(c10::DeviceType d) {
  return d == c10::kCPU ? at::autocast::get_autocast_cpu_dtype()
                        : at::autocast::get_autocast_gpu_dtype();
}
void set_autocast_dtype(c10::DeviceType d, c10::ScalarType t) {
  if (d == c10::kCPU) {
    at::autocast::set_autocast_cpu_dtype(t);
  } else {
    at::autocast::set_autocast_gpu_dtype(t);
  }
}
#endif

}  // namespace

Result<AmpMode> parse_amp_mode(const std::string& name) {
  if (std::optional<AmpMode> mode = kAmpModeNames.find(name)) return *mode;
  return invalid_argument("unknown amp mode '" + name + "': known modes are " +
                          kAmpModeNames.joined());
}

std::string to_string(AmpMode mode) { return kAmpModeNames.name(mode); }

AutocastGuard::AutocastGuard(AmpMode mode, c10::DeviceType device)
    : device_(device),
      previous_enabled_(autocast_enabled(device)),
      previous_dtype_(autocast_dtype(device)) {
  if (device != c10::kCPU && device != c10::kCUDA) {
    throw Error(invalid_argument("autocast supports cpu and cuda devices only"));
  }
  if (mode == AmpMode::kFp16 && device == c10::kCPU) {
    throw Error(invalid_argument("amp fp16 needs a CUDA device; use bf16 on the CPU"));
  }
  set_autocast_enabled(device, mode != AmpMode::kOff);
  if (mode != AmpMode::kOff) {
    set_autocast_dtype(device, mode == AmpMode::kBf16 ? c10::kBFloat16 : c10::kHalf);
  }
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_enabled(device_, previous_enabled_);
  set_autocast_dtype(device_, previous_dtype_);
}

LossScaler::LossScaler(AmpMode mode, LossScalerOptions options)
    : enabled_(mode == AmpMode::kFp16),
      options_(options),
      scale_(enabled_ ? options.init_scale : 1.0) {}

at::Tensor LossScaler::scale(const at::Tensor& loss) const {
  return enabled_ ? loss * scale_ : loss;
}

bool LossScaler::unscale_and_check(const std::vector<at::Tensor>& params) const {
  if (!enabled_) return true;
  at::Tensor all_finite;
  for (const at::Tensor& p : params) {
    at::Tensor grad = p.grad();
    if (!grad.defined()) continue;
    grad.div_(scale_);
    at::Tensor finite = at::isfinite(grad).all();  // stays on the device: one sync below
    all_finite = all_finite.defined() ? all_finite.logical_and(finite) : finite;
  }
  return !all_finite.defined() || all_finite.item<bool>();
}

void LossScaler::update(bool found_inf) {
  if (!enabled_) return;
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    good_steps_ = 0;
    return;
  }
  if (++good_steps_ >= options_.growth_interval) {
    const double grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown)) scale_ = grown;
    good_steps_ = 0;
  }
}

Status LossScaler::load_state(const LossScalerState& state) {
  if (!enabled_) return Status::ok();
  if (!std::isfinite(state.scale) || state.scale <= 0 || state.good_steps < 0) {
    return invalid_argument("loss scaler state: scale must be finite and > 0, good_steps >= 0");
  }
  scale_ = state.scale;
  good_steps_ = state.good_steps;
  return Status::ok();
}

}  // namespace stoker
