#pragma once
// Learning-rate schedules as pure functions of the global step, so resuming from a checkpoint
// needs nothing but the step number.

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>

#include "stoker/util/enum_names.h"
#include "stoker/util/status.h"

namespace stoker {

enum class ScheduleKind {
  kConstant,  // lr
  kStep,      // lr * gamma^floor(t / step_size)
  kCosine,    // cosine from lr down to min_lr over the steps after warm-up
  kOneCycle,  // cosine up from lr / div_factor to lr over pct_start, then cosine down to min_lr
};

inline constexpr auto kScheduleKindNames =
    enum_names<ScheduleKind>({{ScheduleKind::kConstant, "constant"},
                              {ScheduleKind::kStep, "step"},
                              {ScheduleKind::kCosine, "cosine"},
                              {ScheduleKind::kOneCycle, "one-cycle"}});

// "constant", "step", "cosine" or "one-cycle"; anything else is kInvalidArgument.
Result<ScheduleKind> parse_schedule_kind(const std::string& name);
// The inverse of parse_schedule_kind.
std::string to_string(ScheduleKind kind);

// Schedule settings. total_steps counts every optimizer step of the run, warm-up included.
struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::kConstant;
  double lr = 1e-3;          // base lr (peak lr for one-cycle); > 0
  int64_t warmup_steps = 0;  // linear warm-up before the schedule; >= 0
  int64_t total_steps = 0;   // cosine and one-cycle: > warmup_steps
  int64_t step_size = 1;     // step: steps between decays; > 0
  double gamma = 0.1;        // step: decay factor; > 0
  double min_lr = 0.0;       // cosine and one-cycle: final lr; in [0, lr]
  double pct_start = 0.3;    // one-cycle: fraction of the steps spent rising; in (0, 1)
  double div_factor = 25.0;  // one-cycle: starting lr is lr / div_factor; >= 1
};

// The lr at a step. The main schedule runs on t = step - warmup_steps over
// total_steps - warmup_steps steps; during warm-up (step < warmup_steps) the lr rises linearly
// to the schedule's first value: lr_at(step) = lr_at(warmup_steps) * (step + 1) / warmup_steps.
// Past total_steps, cosine and one-cycle stay at min_lr. Immutable: thread-safe.
class LrSchedule {
 public:
  // Throws Error (kInvalidArgument) if `spec` breaks a constraint listed in ScheduleSpec.
  explicit LrSchedule(const ScheduleSpec& spec);

  // The learning rate for optimizer step `step` (0-based; negative counts as 0).
  double lr_at(int64_t step) const;

  const ScheduleSpec& spec() const { return spec_; }

 private:
  // The schedule after warm-up, at t >= 0 steps past it.
  double main_lr(int64_t t) const;

  ScheduleSpec spec_;
};

// Sets the learning rate of every parameter group of `optimizer` (SGD, Adam, AdamW and any other
// torch::optim optimizer whose options implement set_lr).
void set_lr(torch::optim::Optimizer& optimizer, double lr);

}  // namespace stoker
