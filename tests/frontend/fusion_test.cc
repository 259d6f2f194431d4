// Fusion and plan caching, as facts: how many kernels a computation takes, and when a plan
// is built or reused.
#include <gtest/gtest.h>

#include "frontend/realize.h"
#include "frontend/tensor.h"

namespace uopc {
namespace {

size_t Kernels(const std::vector<Tensor>& ts) {
  std::vector<std::shared_ptr<LazyData>> d;
  for (const Tensor& t : ts) d.push_back(t.data());
  absl::StatusOr<std::shared_ptr<const Plan>> p = Runtime::Get().PlanFor(d);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? (*p)->kernels().size() : 0;
}

TEST(Fusion, ElementwiseChainIsOneKernel) {
  Tensor a = Tensor::Rand({16, 16}), b = Tensor::Rand({16, 16}), c = Tensor::Rand({16});
  EXPECT_EQ(Kernels({a + b * c}), 1u);
  EXPECT_EQ(Kernels({((a + b) * c).Exp().Relu() / 3.0}), 1u);
}

TEST(Fusion, ElementwiseFusesIntoTheReduceThatConsumesIt) {
  Tensor a = Tensor::Rand({16, 32}), b = Tensor::Rand({32});
  EXPECT_EQ(Kernels({(a * b + 1.0).Sum({1})}), 1u);
  EXPECT_EQ(Kernels({(a * b).Sum({1}) * 2.0}), 1u);  // and the elementwise after it
  EXPECT_EQ(Kernels({Tensor::Rand({8, 16}).Matmul(Tensor::Rand({16, 4}))}), 1u);
}

TEST(Fusion, RowSoftmaxIsAtMostThreeKernels) {
  EXPECT_LE(Kernels({Tensor::Rand({8, 64}).Softmax(-1)}), 3u);
}

TEST(PlanCache, SameGraphWithNewDataAddsNoPlan) {
  auto step = [](int64_t n) {
    Tensor a = Tensor::Rand({n, 8}), b = Tensor::Rand({8});
    return ((a * b).Sum({1}) + 1.0).Realize().ToVector<float>();
  };
  step(4);
  size_t plans = Runtime::Get().plans().size();
  step(4);
  step(4);
  EXPECT_EQ(Runtime::Get().plans().size(), plans);
  step(5);  // another size: exactly one more plan
  EXPECT_EQ(Runtime::Get().plans().size(), plans + 1);
  step(5);
  EXPECT_EQ(Runtime::Get().plans().size(), plans + 1);
}

TEST(PlanCache, ResultsAreRightForEachRun) {
  for (float k : {1.0f, 2.0f, 3.0f}) {
    Tensor a = Tensor::FromVector<float>({k, 2 * k, 3 * k}, {3});
    EXPECT_EQ((a * a).Sum().Item<float>(), 14 * k * k);
  }
}

TEST(Realize, SeveralTensorsShareOnePlan) {
  Tensor a = Tensor::Rand({4, 4});
  Tensor s = a.Sum(), m = a.Max();
  Tensor::RealizeAll({&s, &m});
  EXPECT_TRUE(s.realized() && m.realized());
  std::vector<float> v = a.ToVector<float>();
  float sum = 0, mx = -1;
  for (float x : v) sum += x, mx = std::max(mx, x);
  EXPECT_NEAR(s.Item<float>(), sum, 1e-5);
  EXPECT_EQ(m.Item<float>(), mx);
}

TEST(Realize, InputsStayAliveWhileALazyTensorNeedsThem) {
  Tensor y;
  {
    Tensor x = Tensor::FromVector<float>({1, 2, 3}, {3});
    y = x * 2.0;
  }  // x is gone; its buffer must not be
  EXPECT_EQ(y.ToVector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(Realize, AConsumerBuiltBeforeItsInputWasRealizedUsesTheResult) {
  Tensor z, y;
  {
    Tensor x = Tensor::FromVector<float>({1, 2, 3}, {3});
    y = x * 2.0;
    z = y + 1.0;  // built from y's expression
    y.Realize();  // y's expression is now its buffer; x can go
  }
  EXPECT_EQ(z.ToVector<float>(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(Kernels({z * 3.0}), 1u);  // reads y's buffer, does not recompute it
}

}  // namespace
}  // namespace uopc
