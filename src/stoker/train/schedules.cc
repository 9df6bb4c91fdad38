#include "stoker/train/schedules.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace stoker {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Cosine interpolation from `from` (progress 0) to `to` (progress 1).
double cosine(double from, double to, double progress) {
  return to + (from - to) * (1.0 + std::cos(kPi * std::clamp(progress, 0.0, 1.0))) / 2.0;
}

Status require(bool ok, const char* field, double value, const char* requirement) {
  if (ok) return Status::ok();
  std::ostringstream out;
  out << "lr schedule: " << field << " = " << value << " " << requirement;
  return invalid_argument(out.str());
}

Status validate(const ScheduleSpec& s) {
  STOKER_RETURN_IF_ERROR(require(std::isfinite(s.lr) && s.lr > 0, "lr", s.lr, "must be > 0"));
  STOKER_RETURN_IF_ERROR(
      require(s.warmup_steps >= 0, "warmup_steps", s.warmup_steps, "must be >= 0"));
  switch (s.kind) {
    case ScheduleKind::kConstant:
      break;
    case ScheduleKind::kStep:
      STOKER_RETURN_IF_ERROR(require(s.step_size > 0, "step_size", s.step_size, "must be > 0"));
      STOKER_RETURN_IF_ERROR(
          require(std::isfinite(s.gamma) && s.gamma > 0, "gamma", s.gamma, "must be > 0"));
      break;
    case ScheduleKind::kOneCycle:
      STOKER_RETURN_IF_ERROR(require(s.pct_start > 0 && s.pct_start < 1, "pct_start", s.pct_start,
                                     "must be in (0, 1)"));
      STOKER_RETURN_IF_ERROR(
          require(s.div_factor >= 1, "div_factor", s.div_factor, "must be >= 1"));
      [[fallthrough]];
    case ScheduleKind::kCosine:
      STOKER_RETURN_IF_ERROR(require(s.total_steps > s.warmup_steps, "total_steps", s.total_steps,
                                     "must be > warmup_steps"));
      STOKER_RETURN_IF_ERROR(
          require(s.min_lr >= 0 && s.min_lr <= s.lr, "min_lr", s.min_lr, "must be in [0, lr]"));
      break;
  }
  return Status::ok();
}

}  // namespace

std::string to_string(ScheduleKind kind) { return kScheduleKindNames.name(kind); }

Result<ScheduleKind> parse_schedule_kind(const std::string& name) {
  if (std::optional<ScheduleKind> kind = kScheduleKindNames.find(name)) return *kind;
  return invalid_argument("unknown lr schedule '" + name + "': known schedules are " +
                          kScheduleKindNames.joined());
}

LrSchedule::LrSchedule(const ScheduleSpec& spec) : spec_(spec) { throw_if_error(validate(spec)); }

double LrSchedule::main_lr(int64_t t) const {
  const ScheduleSpec& s = spec_;
  const double steps = static_cast<double>(s.total_steps - s.warmup_steps);
  switch (s.kind) {
    case ScheduleKind::kConstant:
      return s.lr;
    case ScheduleKind::kStep:
      return s.lr * std::pow(s.gamma, static_cast<double>(t / s.step_size));
    case ScheduleKind::kCosine:
      return cosine(s.lr, s.min_lr, t / steps);
    case ScheduleKind::kOneCycle: {
      const double rise = s.pct_start * steps;
      if (t < rise) return cosine(s.lr / s.div_factor, s.lr, t / rise);
      return cosine(s.lr, s.min_lr, (t - rise) / (steps - rise));
    }
  }
  return s.lr;
}

double LrSchedule::lr_at(int64_t step) const {
  step = std::max<int64_t>(step, 0);
  if (step < spec_.warmup_steps) {
    return main_lr(0) * static_cast<double>(step + 1) / static_cast<double>(spec_.warmup_steps);
  }
  return main_lr(step - spec_.warmup_steps);
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace stoker
