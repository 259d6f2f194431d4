// Optimizers, clipping and the schedule, against the formulas computed by hand.
#include "frontend/optim.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "frontend/nn.h"
#include "frontend/realize.h"

namespace uopc {
namespace {

TEST(SGD, MomentumAndWeightDecay) {
  Tensor w = Tensor::FromVector<float>({1, -2}, {2}).RequiresGrad();
  SGD opt({&w}, 0.1, 0.9, 0.01);
  double w0 = 1, v0 = 0;
  for (int s = 0; s < 3; ++s) {
    (w * w).Sum().Backward();  // gradient 2w
    opt.Step();
    double g = 2 * w0 + 0.01 * w0;
    v0 = 0.9 * v0 + g;
    w0 -= 0.1 * v0;
    EXPECT_NEAR(w.ToVector<float>()[0], w0, 1e-6);
  }
}

TEST(AdamW, MatchesTheFormula) {
  Tensor w = Tensor::FromVector<float>({0.5f}, {1}).RequiresGrad();
  AdamW opt({&w}, 0.01, 0.9, 0.999, 1e-8, 0.1);
  double p = 0.5, m = 0, v = 0;
  for (int t = 1; t <= 5; ++t) {
    (w * w * 3.0).Sum().Backward();  // gradient 6w
    opt.Step();
    double g = 6 * p;
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    double mh = m / (1 - std::pow(0.9, t)), vh = v / (1 - std::pow(0.999, t));
    p -= 0.01 * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * p);
    EXPECT_NEAR(w.Item<float>(), p, 1e-6) << "step " << t;
  }
  EXPECT_EQ(opt.steps(), 5);
  EXPECT_FALSE(w.grad());  // the step consumed it
}

// A step with only_if: where it is false nothing changes (weights, moments, the count the
// caller keeps); where true, the formula's step. Each of the weight, m and v is one kernel
// (the weight's reads the moments as kept), not a value and a second kernel that keeps it,
// also where the gradient reads many buffers (a weight used four times: the sum of four).
TEST(AdamW, OnlyIfKeepsEverythingOrStepsInThreeKernels) {
  Tensor w = Tensor::FromVector<float>({0.5f, -1.0f}, {2}).RequiresGrad();
  std::vector<Tensor> c;
  for (float k = 1; k <= 4; ++k) c.push_back(Tensor::FromVector<float>({k, 2 * k}, {2}).Realize());
  AdamW opt({&w}, 0.01, 0.9, 0.999, 1e-8, 0.1);
  auto step = [&](bool take) {
    ((w * c[0]).Sum() + (w * c[1]).Sum() + (w * c[2]).Sum() + (w * c[3]).Sum()).Backward();
    Tensor loss = w.Sum();  // (realized with the step, as a training loop's is)
    const int64_t kernels = Runtime::Get().executor().stats().kernels;
    opt.Step({&loss}, Tensor::Scalar(take ? 1 : 0, DType::kBool));
    return Runtime::Get().executor().stats().kernels - kernels;
  };
  step(false);
  opt.set_steps(opt.steps() - 1);  // (the step did not happen: as gpt_train says so)
  EXPECT_EQ(w.ToVector<float>(), (std::vector<float>{0.5f, -1.0f}));
  for (Tensor* t : opt.State()) EXPECT_EQ(t->ToVector<float>(), (std::vector<float>{0, 0}));
  const int64_t kernels = step(true);
  const double g = 1 + 2 + 3 + 4, m = 0.1 * g, v = 0.001 * g * g;
  const double mh = m / (1 - 0.9), vh = v / (1 - 0.999);
  EXPECT_NEAR(w.ToVector<float>()[0], 0.5 - 0.01 * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * 0.5), 1e-6);
  EXPECT_NEAR(opt.State()[0]->ToVector<float>()[0], m, 1e-6);
  // the gradient (which reads four buffers; read by the three), the weight, m, v and the
  // loss (keeping m and v after computing them took two kernels more)
  EXPECT_EQ(kernels, 5);
}

TEST(ClipGradNorm, ScalesToTheMaximumNorm) {
  Tensor a = Tensor::FromVector<float>({3}, {1}).RequiresGrad(),
         b = Tensor::FromVector<float>({4}, {1}).RequiresGrad();
  (a * 1.0 + b * 1.0).Sum().Backward();  // gradients 1, 1 ...
  a.SetGrad(Tensor::FromVector<float>({3}, {1}));
  b.SetGrad(Tensor::FromVector<float>({4}, {1}));  // ... replaced: norm 5
  Tensor norm = ClipGradNorm({&a, &b}, 1.0);
  EXPECT_NEAR(norm.Item<float>(), 5.0, 1e-6);
  EXPECT_NEAR(a.grad().Item<float>(), 0.6, 1e-6);
  EXPECT_NEAR(b.grad().Item<float>(), 0.8, 1e-6);
  ClipGradNorm({&a, &b}, 10.0);  // already below: unchanged
  EXPECT_NEAR(b.grad().Item<float>(), 0.8, 1e-6);
}

TEST(CosineLr, WarmupThenCosine) {
  EXPECT_DOUBLE_EQ(CosineLr(0, 10, 110, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(CosineLr(9, 10, 110, 1.0, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(CosineLr(10, 10, 110, 1.0, 0.1), 1.0);
  EXPECT_NEAR(CosineLr(60, 10, 110, 1.0, 0.1), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(CosineLr(110, 10, 110, 1.0, 0.1), 0.1);
}

TEST(Dropout, OnlyInTrainingAndScaled) {
  Tensor::ManualSeed(1);
  Dropout d(0.5);
  Tensor x = Tensor::Ones({1000});
  std::vector<float> v = d.Forward(x).ToVector<float>();
  int zeros = 0;
  for (float e : v) {
    EXPECT_TRUE(e == 0 || e == 2);
    zeros += e == 0;
  }
  EXPECT_GT(zeros, 400);
  EXPECT_LT(zeros, 600);
  d.Train(false);
  EXPECT_EQ(d.Forward(x).ToVector<float>(), std::vector<float>(1000, 1));
}

}  // namespace
}  // namespace uopc
