#include "stoker/train/schedules.h"

#include <gtest/gtest.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>

namespace stoker {
namespace {

constexpr double kPi = 3.14159265358979323846;

ScheduleSpec spec_of(ScheduleKind kind, double lr) {
  ScheduleSpec spec;
  spec.kind = kind;
  spec.lr = lr;
  return spec;
}

TEST(ScheduleKindTest, Parses) {
  EXPECT_EQ(parse_schedule_kind("constant").value(), ScheduleKind::kConstant);
  EXPECT_EQ(parse_schedule_kind("step").value(), ScheduleKind::kStep);
  EXPECT_EQ(parse_schedule_kind("cosine").value(), ScheduleKind::kCosine);
  EXPECT_EQ(parse_schedule_kind("one-cycle").value(), ScheduleKind::kOneCycle);
  for (const char* name : {"constant", "step", "cosine", "one-cycle"})
    EXPECT_EQ(to_string(parse_schedule_kind(name).value()), name);
  Result<ScheduleKind> bad = parse_schedule_kind("linear");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("cosine"), std::string::npos);
}

TEST(LrScheduleTest, Constant) {
  LrSchedule schedule(spec_of(ScheduleKind::kConstant, 0.1));
  EXPECT_DOUBLE_EQ(schedule.lr_at(0), 0.1);
  EXPECT_DOUBLE_EQ(schedule.lr_at(123456), 0.1);
}

TEST(LrScheduleTest, StepDecay) {
  ScheduleSpec spec = spec_of(ScheduleKind::kStep, 1.0);
  spec.step_size = 10;
  spec.gamma = 0.5;
  LrSchedule schedule(spec);
  EXPECT_DOUBLE_EQ(schedule.lr_at(0), 1.0);
  EXPECT_DOUBLE_EQ(schedule.lr_at(9), 1.0);
  EXPECT_DOUBLE_EQ(schedule.lr_at(10), 0.5);
  EXPECT_DOUBLE_EQ(schedule.lr_at(25), 0.25);
}

TEST(LrScheduleTest, CosineToMinLr) {
  ScheduleSpec spec = spec_of(ScheduleKind::kCosine, 1.0);
  spec.total_steps = 100;
  spec.min_lr = 0.2;
  LrSchedule schedule(spec);
  EXPECT_DOUBLE_EQ(schedule.lr_at(0), 1.0);
  EXPECT_NEAR(schedule.lr_at(50), 0.6, 1e-12);
  EXPECT_NEAR(schedule.lr_at(25), 0.2 + 0.8 * (1 + std::cos(kPi / 4)) / 2, 1e-12);
  EXPECT_NEAR(schedule.lr_at(100), 0.2, 1e-12);
  EXPECT_NEAR(schedule.lr_at(1000), 0.2, 1e-12);
}

TEST(LrScheduleTest, WarmupThenCosine) {
  ScheduleSpec spec = spec_of(ScheduleKind::kCosine, 1.0);
  spec.warmup_steps = 4;
  spec.total_steps = 104;
  LrSchedule schedule(spec);
  EXPECT_DOUBLE_EQ(schedule.lr_at(0), 0.25);
  EXPECT_DOUBLE_EQ(schedule.lr_at(1), 0.5);
  EXPECT_DOUBLE_EQ(schedule.lr_at(3), 1.0);
  EXPECT_DOUBLE_EQ(schedule.lr_at(4), 1.0);
  EXPECT_NEAR(schedule.lr_at(54), 0.5, 1e-12);
  EXPECT_NEAR(schedule.lr_at(104), 0.0, 1e-12);
}

TEST(LrScheduleTest, WarmupThenConstant) {
  ScheduleSpec spec = spec_of(ScheduleKind::kConstant, 0.4);
  spec.warmup_steps = 2;
  LrSchedule schedule(spec);
  EXPECT_DOUBLE_EQ(schedule.lr_at(0), 0.2);
  EXPECT_DOUBLE_EQ(schedule.lr_at(1), 0.4);
  EXPECT_DOUBLE_EQ(schedule.lr_at(2), 0.4);
}

TEST(LrScheduleTest, OneCycle) {
  ScheduleSpec spec = spec_of(ScheduleKind::kOneCycle, 1.0);
  spec.total_steps = 100;
  spec.pct_start = 0.3;
  spec.div_factor = 10.0;
  spec.min_lr = 0.01;
  LrSchedule schedule(spec);
  EXPECT_DOUBLE_EQ(schedule.lr_at(0), 0.1);
  EXPECT_NEAR(schedule.lr_at(15), 0.55, 1e-12);   // halfway up
  EXPECT_DOUBLE_EQ(schedule.lr_at(30), 1.0);      // peak
  EXPECT_NEAR(schedule.lr_at(65), 0.505, 1e-12);  // halfway down
  EXPECT_NEAR(schedule.lr_at(100), 0.01, 1e-12);
  EXPECT_LT(schedule.lr_at(29), 1.0);
  EXPECT_LT(schedule.lr_at(31), 1.0);
}

TEST(LrScheduleTest, RejectsInvalidSpecs) {
  ScheduleSpec no_total = spec_of(ScheduleKind::kCosine, 1.0);
  EXPECT_THROW(LrSchedule{no_total}, Error);
  ScheduleSpec warmup_too_long = spec_of(ScheduleKind::kCosine, 1.0);
  warmup_too_long.total_steps = 10;
  warmup_too_long.warmup_steps = 10;
  EXPECT_THROW(LrSchedule{warmup_too_long}, Error);
  ScheduleSpec zero_step = spec_of(ScheduleKind::kStep, 1.0);
  zero_step.step_size = 0;
  EXPECT_THROW(LrSchedule{zero_step}, Error);
  ScheduleSpec bad_pct = spec_of(ScheduleKind::kOneCycle, 1.0);
  bad_pct.total_steps = 10;
  bad_pct.pct_start = 1.0;
  EXPECT_THROW(LrSchedule{bad_pct}, Error);
  EXPECT_THROW(LrSchedule{spec_of(ScheduleKind::kConstant, 0.0)}, Error);
  try {
    ScheduleSpec high_min = spec_of(ScheduleKind::kCosine, 0.1);
    high_min.total_steps = 10;
    high_min.min_lr = 0.5;
    LrSchedule schedule(high_min);
    FAIL() << "min_lr > lr accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("min_lr"), std::string::npos) << e.what();
  }
}

TEST(SetLrTest, SetsEveryParamGroupOfEachOptimizerKind) {
  std::vector<at::Tensor> a = {torch::zeros({2}, torch::requires_grad())};
  std::vector<at::Tensor> b = {torch::zeros({3}, torch::requires_grad())};
  torch::optim::SGD sgd(a, torch::optim::SGDOptions(0.1));
  sgd.add_param_group(torch::optim::OptimizerParamGroup(b));
  torch::optim::Adam adam(a, torch::optim::AdamOptions(0.1));
  adam.add_param_group(torch::optim::OptimizerParamGroup(b));
  torch::optim::AdamW adamw(a, torch::optim::AdamWOptions(0.1));
  adamw.add_param_group(torch::optim::OptimizerParamGroup(b));
  for (torch::optim::Optimizer* optimizer :
       std::initializer_list<torch::optim::Optimizer*>{&sgd, &adam, &adamw}) {
    set_lr(*optimizer, 0.025);
    ASSERT_EQ(optimizer->param_groups().size(), 2u);
    for (auto& group : optimizer->param_groups()) EXPECT_DOUBLE_EQ(group.options().get_lr(), 0.025);
  }
}

}  // namespace
}  // namespace stoker
