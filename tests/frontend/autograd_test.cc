// Gradients against central finite differences, in f64, for every differentiable op.
#include "frontend/autograd.h"

#include <cmath>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "frontend/realize.h"

namespace uopc {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

std::vector<double> Random(int64_t n, uint32_t seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// loss = sum(f(inputs) * w) for fixed random weights w: every output element matters.
double Loss(const Fn& f, const std::vector<TensorShape>& shapes,
            const std::vector<std::vector<double>>& values, std::vector<Tensor>* inputs = nullptr,
            Tensor* loss_out = nullptr) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < shapes.size(); ++i)
    in.push_back(Tensor::FromVector(values[i], shapes[i], DType::kF64).RequiresGrad());
  Tensor y = f(in);
  Tensor w = Tensor::FromVector(Random(y.numel().value(), 99, -1, 1), y.shape(), DType::kF64);
  Tensor loss = (y.Cast(DType::kF64) * w).Sum();
  if (inputs) *inputs = in;
  if (loss_out) *loss_out = loss;
  return loss.Item<double>();
}

void Check(const char* name, const Fn& f, std::vector<TensorShape> shapes, double lo = -2,
           double hi = 2) {
  SCOPED_TRACE(name);
  std::vector<std::vector<double>> values;
  uint32_t seed = 1;
  for (const TensorShape& s : shapes) {
    int64_t n = 1;
    for (const SymInt& d : s) n *= d.value();
    values.push_back(Random(n, seed++, lo, hi));
  }
  std::vector<Tensor> in;
  Tensor loss;
  Loss(f, shapes, values, &in, &loss);
  std::vector<Tensor> grads = Gradients(loss, in);
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<double> analytic = grads[i].ToVector<double>();
    ASSERT_EQ(analytic.size(), values[i].size());
    for (size_t k = 0; k < values[i].size(); ++k) {
      const double h = 1e-6;
      auto v = values;
      v[i][k] += h;
      double up = Loss(f, shapes, v);
      v[i][k] -= 2 * h;
      double down = Loss(f, shapes, v);
      double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(analytic[k], numeric, 1e-5 * std::max(1.0, std::abs(numeric)))
          << "input " << i << " element " << k;
    }
  }
}

TEST(Autograd, Elementwise) {
  Check("add", [](auto& x) { return x[0] + x[1]; }, {{2, 3}, {3}});
  Check("sub", [](auto& x) { return x[0] - x[1]; }, {{2, 3}, {2, 1}});
  Check("mul", [](auto& x) { return x[0] * x[1]; }, {{2, 3}, {2, 3}});
  Check("div", [](auto& x) { return x[0] / (x[1] * x[1] + 0.5); }, {{2, 3}, {3}});
  Check("maximum", [](auto& x) { return x[0].Maximum(x[1]); }, {{7}, {7}});
  Check("minimum", [](auto& x) { return x[0].Minimum(x[1]); }, {{7}, {7}});
  Check("where", [](auto& x) { return x[0].Gt(0.0).Where(x[0] * 3.0, x[1]); }, {{6}, {6}});
  Check("exp", [](auto& x) { return x[0].Exp(); }, {{5}});
  Check(
      "log", [](auto& x) { return x[0].Log(); }, {{5}}, 0.2, 3);
  Check(
      "sqrt", [](auto& x) { return x[0].Sqrt(); }, {{5}}, 0.2, 3);
  Check("sin", [](auto& x) { return x[0].Sin(); }, {{5}});
  Check("cos", [](auto& x) { return x[0].Cos(); }, {{5}});
  Check("tanh", [](auto& x) { return x[0].Tanh(); }, {{5}});
  Check("sigmoid", [](auto& x) { return x[0].Sigmoid(); }, {{5}});
  Check("relu", [](auto& x) { return x[0].Relu(); }, {{8}});
  Check("gelu", [](auto& x) { return x[0].Gelu(); }, {{8}});
  Check("abs", [](auto& x) { return x[0].Abs(); }, {{8}});
  Check(
      "reciprocal", [](auto& x) { return x[0].Reciprocal(); }, {{5}}, 0.5, 2);
  Check(
      "pow", [](auto& x) { return x[0].Pow(2.5); }, {{5}}, 0.2, 2);
  Check(
      "pow tensor", [](auto& x) { return x[0].Pow(x[1]); }, {{5}, {5}}, 0.2, 2);
  Check("square", [](auto& x) { return x[0].Square(); }, {{5}});
}

// Far out on the flat side, a saturating op's gradient is 0, not NaN: GELU, sigmoid and tanh
// overflow exp there (1 / (1 + inf) = 0), and the gradient must not multiply 0 by that inf.
// And |x|^2.5 at 0 (exp(2.5 log 0)): its gradient is 0 there, not 0 / 0.
TEST(Autograd, SaturatedActivationsAndPowAtZeroHaveFiniteGradients) {
  const std::vector<float> x{-1000.0f, -60.0f, -12.0f, -3.0f, 0.0f, 3.0f, 12.0f, 60.0f, 1000.0f};
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops{
      {"gelu", [](const Tensor& t) { return t.Gelu(); }},
      {"sigmoid", [](const Tensor& t) { return t.Sigmoid(); }},
      {"tanh", [](const Tensor& t) { return t.Tanh(); }},
      {"pow 2.5 of |x|", [](const Tensor& t) { return t.Abs().Pow(2.5); }}};
  for (const auto& [name, f] : ops) {
    SCOPED_TRACE(name);
    Tensor t = Tensor::FromVector(x, {static_cast<int64_t>(x.size())});
    t.RequiresGrad();
    Tensor y = f(t);
    y.Sum().Backward();
    const std::vector<float> value = y.ToVector<float>(), grad = t.grad().ToVector<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      SCOPED_TRACE(x[i]);
      EXPECT_TRUE(std::isfinite(value[i])) << value[i];
      EXPECT_TRUE(std::isfinite(grad[i])) << grad[i];
    }
  }
}

// ReLU as PyTorch has it: the gradient at exactly 0 is 0 (a maximum with 0 would share it
// between the tie's sides, 0.5), and NaN stays NaN.
TEST(Autograd, ReluAtZeroHasGradientZeroAndKeepsNaN) {
  Tensor x = Tensor::FromVector<float>({-1.0f, -0.0f, 0.0f, 2.0f, NAN}, {5}).RequiresGrad();
  Tensor y = x.Relu();
  std::vector<Tensor> g = Gradients(y.Slice(0, 0, 4).Sum(), {x});
  const std::vector<float> value = y.ToVector<float>(), grad = g[0].ToVector<float>();
  EXPECT_EQ(std::vector<float>(value.begin(), value.begin() + 4), (std::vector<float>{0, 0, 0, 2}));
  EXPECT_TRUE(std::isnan(value[4]));
  EXPECT_EQ(grad, (std::vector<float>{0, 0, 0, 1, 0}));
}

TEST(Autograd, CastsPassTheGradientThrough) {
  // (finite differences through an f32 rounding are not meaningful: checked exactly)
  Tensor x = Tensor::FromVector<double>({0.1, -2.5, 3}, {3}, DType::kF64).RequiresGrad();
  std::vector<Tensor> g = Gradients((x.Cast(DType::kF32).Cast(DType::kF64) * 2.0).Sum(), {x});
  EXPECT_EQ(g[0].ToVector<double>(), (std::vector<double>{2, 2, 2}));
  Tensor h = Tensor::FromVector<float>({1, 2}, {2}, DType::kF16).RequiresGrad();
  std::vector<Tensor> gh = Gradients((h.Float() * h.Float()).Sum(), {h});
  EXPECT_EQ(gh[0].dtype(), DType::kF16);
  EXPECT_EQ(gh[0].ToVector<float>(), (std::vector<float>{2, 4}));
}

TEST(Autograd, Reductions) {
  Check("sum", [](auto& x) { return x[0].Sum({1}); }, {{3, 4}});
  Check("sum all", [](auto& x) { return x[0].Sum(); }, {{3, 4}});
  Check("max", [](auto& x) { return x[0].Max({0}); }, {{3, 4}});
  Check("min", [](auto& x) { return x[0].Min({1}, true); }, {{3, 4}});
  Check("mean", [](auto& x) { return x[0].Mean({-1}); }, {{3, 4}});
  Check("var", [](auto& x) { return x[0].Var({1}); }, {{3, 4}});
}

TEST(Autograd, Movement) {
  Check("reshape", [](auto& x) { return x[0].Reshape({4, 3}) * 2.0; }, {{3, 4}});
  Check("permute", [](auto& x) { return x[0].Permute({2, 0, 1}); }, {{2, 3, 4}});
  Check("transpose", [](auto& x) { return x[0].Transpose(); }, {{3, 4}});
  Check("expand", [](auto& x) { return x[0].Expand({3, 4}) * 1.5; }, {{3, 1}});
  Check("pad", [](auto& x) { return x[0].Pad({{1, 0}, {2, 1}}); }, {{2, 3}});
  Check("shrink", [](auto& x) { return x[0].Shrink({{1, 3}, {0, 2}}); }, {{3, 4}});
  Check("slice with step", [](auto& x) { return x[0].Slice(1, 0, 4, 2); }, {{3, 4}});
  Check("flip", [](auto& x) { return x[0].Flip({0, 1}); }, {{3, 4}});
  Check("cat", [](auto& x) { return Tensor::Cat({x[0], x[1]}, 1); }, {{2, 3}, {2, 2}});
  Check("stack", [](auto& x) { return Tensor::Stack({x[0], x[1] * 2.0}, 0); }, {{2, 3}, {2, 3}});
}

TEST(Autograd, LinearAlgebraAndLosses) {
  Check("matmul", [](auto& x) { return x[0].Matmul(x[1]); }, {{3, 4}, {4, 2}});
  Check("batched matmul", [](auto& x) { return x[0].Matmul(x[1]); }, {{2, 3, 4}, {4, 2}});
  Check("softmax", [](auto& x) { return x[0].Softmax(-1); }, {{3, 5}});
  Check("log_softmax", [](auto& x) { return x[0].LogSoftmax(1); }, {{3, 5}});
  Tensor targets = Tensor::FromVector<int32_t>({4, 0, 2}, {3});
  Check("cross_entropy", [&](auto& x) { return x[0].CrossEntropy(targets); }, {{3, 5}});
  Check("layer norm",
        [](auto& x) {
          Tensor m = x[0].Mean({-1}, true);
          Tensor v = (x[0] - m).Square().Mean({-1}, true);
          return (x[0] - m) * (v + 1e-5).Rsqrt() * x[1] + x[2];
        },
        {{3, 6}, {6}, {6}});
}

TEST(Autograd, GradientsAccumulateAndFlowThroughRealizedIntermediates) {
  Tensor w = Tensor::FromVector<double>({1, 2, 3}, {3}, DType::kF64).RequiresGrad();
  Tensor h = (w * w);
  h.Realize();  // realized mid-graph: backward still goes through it
  Tensor loss = (h * 2.0).Sum();
  loss.Backward();
  EXPECT_EQ(w.grad().ToVector<double>(), (std::vector<double>{4, 8, 12}));
  (w.Sum() * 3.0).Backward();
  EXPECT_EQ(w.grad().ToVector<double>(), (std::vector<double>{7, 11, 15}));
  w.ZeroGrad();
  EXPECT_FALSE(w.grad());
}

TEST(Autograd, ErrorsAreClear) {
  Tensor w = Tensor::FromVector<float>({1, 2}, {2}).RequiresGrad();
  try {
    (w * 2.0).Backward();
    FAIL() << "a non-scalar loss";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "backward: a loss of shape (2) and dtype f32; expected one float value");
  }
  try {
    Tensor::FromVector<int32_t>({1}, {1}).RequiresGrad();
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "requires_grad: a tensor of dtype i32; only float tensors have gradients");
  }
  // an op without a gradient rule is an error naming it, never a silent zero gradient: a
  // float's bits read as another float (a bitcast from an integer has none, as an integer's
  // cast: what Detach reads through)
  Tensor x = Tensor::FromVector<float>({1, 2}, {2}, DType::kF16).RequiresGrad();
  Tensor bits(x.uop().Bitcast(DType::kBF16), {2}, DType::kBF16, x.device(), {x.data()});
  try {
    Gradients((bits.Float() * x.Float()).Sum(), {x});
    FAIL() << "a gradient through a bitcast";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "backward: no gradient rule for bitcast (dtype bf16); expected a differentiable "
                 "tensor op");
  }
}

TEST(Autograd, AParameterAndItsGradientAreFreedTogether) {
  std::weak_ptr<LazyData> param, grad;
  {
    Tensor w = Tensor::FromVector<float>({1, 2, 3}, {3}).RequiresGrad();
    Tensor h = (w * 2).Realize();  // a realized intermediate that holds w
    (h * w).Sum().Backward();
    EXPECT_EQ(w.grad().ToVector<float>(), (std::vector<float>{4, 8, 12}));
    param = w.data();
    grad = w.grad().data();
  }
  EXPECT_TRUE(param.expired());  // no cycle through the gradient
  EXPECT_TRUE(grad.expired());
}

// Detach stops the gradient, whether the tensor is lazy or realized.
TEST(Autograd, DetachStopsTheGradient) {
  Tensor x = Tensor::FromVector<double>({1, 2, 3}, {3}, DType::kF64).RequiresGrad();
  // d/dx of sum(detach(x * x) * x) is x * x, not 3 x^2
  std::vector<Tensor> g = Gradients(((x * x).Detach() * x).Sum(), {x});
  EXPECT_EQ(g[0].ToVector<double>(), (std::vector<double>{1, 4, 9}));
  Tensor y = x * x;
  y.Realize();
  std::vector<Tensor> h = Gradients((y.Detach() * x).Sum(), {x});
  EXPECT_EQ(h[0].ToVector<double>(), (std::vector<double>{1, 4, 9}));
}

}  // namespace
}  // namespace uopc
