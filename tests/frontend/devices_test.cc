// Tensors on several devices (two CPU devices here, UOPC_CPU_DEVICES=2 from the BUILD rule):
// creation on a device, To, the error for an op across devices, gradients back through
// copies, and a GPT split across the two devices against the same GPT on one.
#include <cmath>

#include <gtest/gtest.h>

#include "frontend/autograd.h"
#include "frontend/nn.h"
#include "frontend/optim.h"
#include "frontend/realize.h"

namespace uopc {
namespace {

void ExpectNear(const std::vector<float>& a, const std::vector<float>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], tol * std::max(1.0, std::abs(static_cast<double>(b[i])))) << i;
}

// The program of the test, with its inputs on `d0` and `d1`.
Tensor Program(const char* d0, const char* d1) {
  Tensor::ManualSeed(3);
  Tensor a = Tensor::Randn({4, 8}, DType::kF32, d0), b = Tensor::Randn({8, 3}, DType::kF32, d1);
  Tensor h = a.Relu().To(d1).Matmul(b) + 1.0;            // on d1
  return (h.Sum({0}).To(d0) * a.Sum()).Softmax(-1);       // back on d0
}

TEST(Devices, AProgramOnTwoDevicesEqualsTheSameProgramOnOne) {
  Tensor two = Program("CPU:0", "CPU:1"), one = Program("CPU:0", "CPU:0");
  EXPECT_EQ(two.device()->name(), "CPU:0");
  EXPECT_EQ(two.ToVector<float>(), one.ToVector<float>());  // the same kernels: bit for bit
}

TEST(Devices, CreationAndToPutTensorsWhereTheyAreAsked) {
  Tensor z = Tensor::Zeros({2, 3}, DType::kF32, "cpu:1");
  EXPECT_EQ(z.device()->name(), "CPU:1");
  EXPECT_EQ(z.Realize().ToVector<float>(), std::vector<float>(6, 0.0f));
  Tensor x = Tensor::FromVector<float>({1, 2, 3}, {3}, DType::kF32, "CPU:1");
  EXPECT_EQ(x.To("CPU:1").uop(), x.uop());  // already there: no copy
  Tensor y = x.To("CPU:0");
  EXPECT_EQ(y.device()->name(), "CPU:0");
  EXPECT_EQ(y.ToVector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(Tensor::Arange(0, 4, 1, "CPU:1").device()->name(), "CPU:1");
  try {
    x.To("CPU:7");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("no device CPU:7 (devices: CPU:0, CPU:1", 0), 0u)
        << e.what();
  }
}

TEST(Devices, AnOpOnTwoDevicesIsAnErrorThatNamesBoth) {
  Tensor a = Tensor::FromVector<float>({1, 1, 1}, {3}, DType::kF32, "CPU:0"),
         b = Tensor::FromVector<float>({1, 1, 1}, {3}, DType::kF32, "CPU:1");
  try {
    (a + b).Realize();
    FAIL() << "no silent copies";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "add: tensors on CPU:0 and CPU:1; expected one device: move one with "
                 "To(\"CPU:0\") or To(\"CPU:1\")");
  }
  EXPECT_THROW(a.Matmul(b), Error);
  EXPECT_THROW(b * Tensor::Ones({3}, DType::kF32, "CPU:0").Realize(), Error);  // data on CPU:0
  // constants that are not realized hold no data anywhere: they join any device
  Tensor c = b * 2.0 + Tensor::Scalar(1.0) - Tensor::Ones({3}, DType::kF32, "CPU:0");
  EXPECT_EQ(c.device()->name(), "CPU:1");
  EXPECT_EQ(c.ToVector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ((-Tensor::Scalar(1.0)).Minimum(b).device()->name(), "CPU:1");
}

TEST(Devices, AnInPlaceAssignFromAnotherDeviceWritesOnTheTargetsDevice) {
  Tensor c = Tensor::Zeros({3, 2}, DType::kF32, "CPU:1").Realize();
  Buffer before = c.data()->buffer;
  c.Slice(0, 1, 2).Assign(Tensor::FromVector<float>({7, 8}, {1, 2}, DType::kF32, "CPU:0") * 2);
  EXPECT_TRUE(c.data()->buffer.SameMemory(before));
  EXPECT_EQ(c.device()->name(), "CPU:1");
  EXPECT_EQ(c.ToVector<float>(), (std::vector<float>{0, 0, 14, 16, 0, 0}));
}

TEST(Devices, ThePlanHasCopySteps) {
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, {4}, DType::kF32, "CPU:0");
  Tensor y = (x * 2.0).To("CPU:1") + 1.0;
  absl::StatusOr<std::shared_ptr<const Plan>> p = Runtime::Get().PlanFor({y.data()});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ((*p)->copies().size(), 1u);
  EXPECT_EQ((*p)->kernels().size(), 2u);
  EXPECT_NE(PlanString(**p).find("copy   CPU:0 -> CPU:1  16 B"), std::string::npos);
  EXPECT_EQ(y.ToVector<float>(), (std::vector<float>{3, 5, 7, 9}));
}

TEST(Devices, GradientsFlowBackThroughCopies) {
  Tensor w = Tensor::FromVector<float>({1, -2, 3}, {3}, DType::kF32, "CPU:0").RequiresGrad();
  Tensor x = Tensor::FromVector<float>({4, 5, 6}, {3}, DType::kF32, "CPU:1");
  Tensor loss = (w.To("CPU:1") * x).Sum() + w.Square().Sum().To("CPU:1");
  loss.Backward();
  ASSERT_TRUE(w.grad());
  EXPECT_EQ(w.grad().device()->name(), "CPU:0");
  EXPECT_EQ(w.grad().ToVector<float>(), (std::vector<float>{6, 1, 12}));  // x + 2w
}

TEST(Devices, AModuleMovesAllItsParameters) {
  Linear l(3, 2);
  l.To("CPU:1");
  for (Tensor* p : l.Parameters()) {
    EXPECT_EQ(p->device()->name(), "CPU:1");
    EXPECT_TRUE(p->requires_grad());
    EXPECT_TRUE(p->realized());
  }
  EXPECT_EQ(l.device()->name(), "CPU:1");
  Tensor y = l.Forward(Tensor::Ones({1, 3}, DType::kF32, "CPU:1"));
  EXPECT_EQ(y.device()->name(), "CPU:1");
}

// ---- a GPT split across two devices ----

struct Batch {
  std::vector<int32_t> x, y;
};

Batch MakeBatch(int64_t B, int64_t T, int64_t vocab, uint32_t seed) {
  Batch b;
  for (int64_t i = 0; i < B * T; ++i) {
    b.x.push_back(static_cast<int32_t>((i * 7 + seed) % vocab));
    b.y.push_back(static_cast<int32_t>((i * 3 + seed * 5) % vocab));
  }
  return b;
}

Tensor Loss(const Gpt& model, const Batch& b, int64_t B, int64_t T, Tensor* logits = nullptr) {
  Tensor out = model.Forward(Tensor::FromVector(b.x, {B, T}));
  if (logits) *logits = out;
  return out.Reshape({B * T, model.config.vocab})
      .CrossEntropy(Tensor::FromVector(b.y, {B * T}, DType::kI32, out.device()));
}

TEST(Devices, AGptSplitAcrossTwoDevicesMatchesOneDevice) {
  const GptConfig c{11, 8, 16, 2, 4, 0.0};
  const int64_t B = 2, T = 8;
  Tensor::ManualSeed(5);
  Gpt one(c);
  Tensor::ManualSeed(5);
  Gpt two(c);
  two.Split({"CPU:0", "CPU:1"});
  EXPECT_EQ(two.h[1]->device()->name(), "CPU:0");
  EXPECT_EQ(two.h[2]->device()->name(), "CPU:1");
  EXPECT_EQ(two.lm_head.device()->name(), "CPU:1");
  // logits and every gradient
  Batch b = MakeBatch(B, T, c.vocab, 1);
  Tensor l1, l2;
  Tensor loss1 = Loss(one, b, B, T, &l1), loss2 = Loss(two, b, B, T, &l2);
  ExpectNear(l2.ToVector<float>(), l1.ToVector<float>(), 1e-6);
  loss1.Backward();
  loss2.Backward();
  NamedParams p1 = one.NamedParameters(), p2 = two.NamedParameters();
  ASSERT_EQ(p1.size(), p2.size());
  for (size_t i = 0; i < p1.size(); ++i) {
    SCOPED_TRACE(p1[i].first);
    EXPECT_EQ(p2[i].second->grad().device(), p2[i].second->device());
    ExpectNear(p2[i].second->grad().ToVector<float>(), p1[i].second->grad().ToVector<float>(),
               1e-6);
  }
  // 20 steps of training: the same losses
  AdamW o1(one.Parameters(), 3e-3), o2(two.Parameters(), 3e-3);
  o1.ZeroGrad();
  o2.ZeroGrad();
  for (int step = 0; step < 20; ++step) {
    Batch s = MakeBatch(B, T, c.vocab, step);
    double losses[2];
    int k = 0;
    for (auto [model, opt] : {std::pair{&one, &o1}, std::pair{&two, &o2}}) {
      Tensor loss = Loss(*model, s, B, T);
      loss.Backward();
      ClipGradNorm(model->Parameters(), 1.0);
      opt->Step({&loss});
      opt->ZeroGrad();
      losses[k++] = loss.Item<float>();
    }
    EXPECT_NEAR(losses[1], losses[0], 1e-6 * std::abs(losses[0])) << "step " << step;
  }
}

}  // namespace
}  // namespace uopc
