// Block coordinate descent for MAE (train/mae_schedule.h): parsing, phases by step number, and
// which gradients survive a step of each phase.
#include "seqlab/train/mae_schedule.h"

#include "seqlab/core/error.h"

#include <gtest/gtest.h>

using namespace seqlab;

TEST(MaeSchedule, ParsesJointAndBcd) {
  EXPECT_TRUE(MaeSchedule::parse("joint").joint());
  auto s = MaeSchedule::parse("bcd:2,3");
  EXPECT_FALSE(s.joint());
  using P = MaeSchedule::Phase;
  const std::vector<P> want = {P::gates, P::gates, P::experts, P::experts, P::experts,
                               P::gates, P::gates, P::experts, P::experts, P::experts};
  for (int64_t step = 0; step < 10; ++step) EXPECT_EQ(s.phase(step), want[step]) << step;
  for (const char* bad : {"", "bcd", "bcd:1", "bcd:0,1", "bcd:1,0", "bcd:a,1", "bcd:1,-2",
                          "bcd:1,1,1", "alternate", "bcd:1.5,1"})
    EXPECT_THROW(MaeSchedule::parse(bad), Error) << bad;
}

TEST(MaeSchedule, TellsGatesFromExperts) {
  EXPECT_TRUE(MaeSchedule::is_gate("blocks.0.mixer.gate.fc1.weight"));
  EXPECT_TRUE(MaeSchedule::is_gate("gate.fc2.bias"));
  EXPECT_FALSE(MaeSchedule::is_gate("blocks.0.mixer.q.weight"));
  EXPECT_FALSE(MaeSchedule::is_gate("blocks.0.mixer.gates_extra"));
}

TEST(MaeSchedule, MasksTheInactiveBlock) {
  auto make = [] {
    std::vector<std::pair<std::string, torch::Tensor>> named = {
        {"blocks.0.mixer.gate.fc1.weight", torch::zeros({2, 2})},
        {"blocks.0.mixer.q.weight", torch::zeros({2, 2})},
        {"wte.weight", torch::zeros({3, 2})}};
    for (auto& [n, p] : named) p.mutable_grad() = torch::ones_like(p);
    return named;
  };
  auto s = MaeSchedule::parse("bcd:1,1");
  auto gates = make();
  s.mask_gradients(gates, 0);  // a gate step
  EXPECT_TRUE(gates[0].second.grad().defined());
  EXPECT_FALSE(gates[1].second.grad().defined());
  EXPECT_FALSE(gates[2].second.grad().defined());
  auto experts = make();
  s.mask_gradients(experts, 1);  // an expert step
  EXPECT_FALSE(experts[0].second.grad().defined());
  EXPECT_TRUE(experts[1].second.grad().defined());
  EXPECT_TRUE(experts[2].second.grad().defined());
  auto joint = make();
  MaeSchedule::parse("joint").mask_gradients(joint, 0);
  for (auto& [n, p] : joint) EXPECT_TRUE(p.grad().defined()) << n;
}
