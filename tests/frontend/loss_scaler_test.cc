// LossScaler: GradScaler's semantics, step by step (frontend/loss_scaler.h).
#include "frontend/loss_scaler.h"

#include <gtest/gtest.h>

#include "frontend/error.h"

namespace uopc {
namespace {

// One step's update with gradients that are `finite`.
void Step(LossScaler& s, bool finite) {
  Tensor f = Tensor::FromVector(std::vector<bool>{finite}, {});
  std::vector<Tensor*> also = s.Update(f);
  Tensor::RealizeAll(also);  // (an optimizer's step realizes them with its updates)
  s.Advance();
}

TEST(LossScaler, HalvesOnANonFiniteStepAndDoublesAfterIntervalCleanOnes) {
  LossScaler s({.scale = 1024, .clean_steps = 0, .interval = 3});
  EXPECT_EQ(s.scale(), 1024);
  Step(s, false);
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.clean_steps(), 0);
  Step(s, true);
  Step(s, true);
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.clean_steps(), 2);
  Step(s, true);  // the third clean step in a row
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_EQ(s.clean_steps(), 0);
  Step(s, true);
  Step(s, false);  // (a non-finite step starts the count again)
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.clean_steps(), 0);
  EXPECT_EQ(LossScaler().scale(), 65536);  // 2^16, as GradScaler starts
}

TEST(LossScaler, ScalesTheLossAndUnscalesTheGradients) {
  LossScaler s({.scale = 256});
  Tensor w = Tensor::FromVector(std::vector<float>{1, 2, 3}, {3}).RequiresGrad();
  Tensor loss = (w * w).Sum();
  EXPECT_EQ(s.Scale(loss).Item<float>(), 14 * 256);
  s.Scale(loss).Backward();
  EXPECT_EQ(w.grad().ToVector<float>(), (std::vector<float>{512, 1024, 1536}));
  s.Unscale({&w});
  EXPECT_EQ(w.grad().ToVector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(LossScaler, BadOptionsAndAnAdvanceWithoutAnUpdateAreErrors) {
  EXPECT_THROW(LossScaler({.scale = 0}), Error);
  EXPECT_THROW(LossScaler({.interval = 0}), Error);
  LossScaler s;
  EXPECT_THROW(s.Advance(), Error);
}

}  // namespace
}  // namespace uopc
