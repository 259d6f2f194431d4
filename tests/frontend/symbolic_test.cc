// Symbolic dims in Tensor: a bound Variable stands in a shape; every op takes it; the graph
// holds the VAR, so another value reuses the plan; results equal the same program on a
// tensor of that fixed shape.
#include <gtest/gtest.h>

#include "tests/testing/error_of.h"

#include <functional>
#include <string>
#include <vector>

#include "frontend/autograd.h"
#include "frontend/realize.h"
#include "frontend/tensor.h"

namespace uopc {
namespace {

using testing::ErrorOf;

std::vector<float> Values(int64_t n, float scale = 1) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7) % 11) - 3;
  return v;
}

TEST(SymInt, ArithmeticPrintingAndEquality) {
  SymInt T = SymInt::Variable("T", 1, 16, 5), pos = SymInt::Variable("pos", 0, 8, 3);
  EXPECT_EQ(T.value(), 5);
  EXPECT_EQ(T.max(), 16);
  EXPECT_EQ((pos + T).ToString(), "pos+T");
  EXPECT_EQ((pos + T).value(), 8);
  EXPECT_EQ((pos + T).max(), 24);
  EXPECT_EQ((T * 4).value(), 20);
  EXPECT_EQ(((T * 4).FloorDiv(4)).ToString(), "T");
  EXPECT_TRUE(pos + T - pos == T);
  EXPECT_FALSE(T == 5);  // equal now, not for every value
  EXPECT_TRUE((pos + T - T).is_symbolic());
  EXPECT_FALSE((T - T).is_symbolic());
  EXPECT_EQ(ErrorOf([] { SymInt::Variable("T", 1, 16, 17); }),
            "variable: T bound to 17; expected 1 <= T <= 16");
  EXPECT_EQ(ErrorOf([&] { T + SymInt::Variable("T", 1, 16, 6); }),
            "VAR T bound to 5 and to 6 in one graph; expected one value per VAR");
  EXPECT_EQ(ErrorOf([&] { T + SymInt::Variable("T", 1, 32, 5); }),
            "two VARs named T in one graph: in [1, 16] and in [1, 32]; expected one VAR per name");
}

TEST(SymbolicTensor, ShapesPrintAndRealizeAtTheUpperBound) {
  SymInt T = SymInt::Variable("T", 1, 16, 5);
  Tensor z = Tensor::Zeros({2, T, 3});
  EXPECT_EQ(ShapeString(z.shape()), "(2, T, 3)");
  EXPECT_EQ(z.numel().value(), 30);
  z.Realize();
  EXPECT_EQ(z.data()->buffer.count(), 2 * 16 * 3);  // allocated for the largest T
  EXPECT_EQ(z.ToVector<float>(), std::vector<float>(30, 0.0f));
  Tensor x = Tensor::FromVector(Values(10), {T, 2});
  EXPECT_EQ(x.ToVector<float>(), Values(10));
  EXPECT_EQ((x + 1).ToVector<float>(), (Tensor::FromVector(Values(10), {5, 2}) + 1).ToVector<float>());
}

// The program of the test, on x of shape (n, 4), and its value on a fixed-shape tensor.
Tensor Program(const Tensor& x, const Tensor& w) {
  Tensor h = (x.Matmul(w) * 0.5 + 1).Relu();                // (n, 3)
  Tensor s = h.Softmax(0);                                    // over the symbolic axis
  Tensor m = x.Mean({0}, true);                               // a count that is symbolic
  Tensor r = (x - m).Reshape({-1}).Reshape({x.shape(0), 2, 2}).Sum({2});  // (n, 2)
  return Tensor::Cat({s.Sum({1}, true), r.Slice(1, 0, 1) + x.Var({0})}, 1).Flip({0});
}

TEST(SymbolicTensor, OpsEqualTheFixedShapeProgramAndOnePlanServesEveryValue) {
  Tensor w = Tensor::FromVector(Values(12, 0.25f), {4, 3}).Realize();
  size_t plans = 0;
  for (int64_t n : {5, 9, 2, 16}) {
    SCOPED_TRACE(n);
    SymInt T = SymInt::Variable("T", 1, 16, n);
    Tensor sym = Program(Tensor::FromVector(Values(4 * n), {T, 4}), w);
    Tensor fixed = Program(Tensor::FromVector(Values(4 * n), {n, 4}), w);
    EXPECT_EQ(ShapeString(sym.shape()), "(T, 5)");
    std::vector<float> a = sym.ToVector<float>(), b = fixed.ToVector<float>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << i;
    if (n == 5) plans = Runtime::Get().plans().size();
  }
  // every fixed n was a new plan; every symbolic one after the first was not
  SymInt T = SymInt::Variable("T", 1, 16, 7);
  size_t before = Runtime::Get().plans().size();
  Program(Tensor::FromVector(Values(28), {T, 4}), w).Realize();
  EXPECT_EQ(Runtime::Get().plans().size(), before);
  EXPECT_GT(plans, 0u);
}

TEST(SymbolicTensor, SlicesWithSymbolicBounds) {
  Tensor x = Tensor::FromVector(Values(12), {12}).Realize();
  SymInt pos = SymInt::Variable("pos", 0, 11, 4), T = SymInt::Variable("T", 1, 12, 3);
  Tensor s = x.Slice(0, pos, pos + T);
  EXPECT_EQ(ShapeString(s.shape()), "(T)");
  std::vector<float> v = Values(12);
  EXPECT_EQ(s.ToVector<float>(), (std::vector<float>{v[4], v[5], v[6]}));
  EXPECT_EQ(x.Slice(0, 0, pos).ToVector<float>(), (std::vector<float>{v[0], v[1], v[2], v[3]}));
  EXPECT_EQ(x.Slice(0, pos, pos + 1).shape(), (TensorShape{1}));
}

TEST(SymbolicTensor, ErrorsNameTheVarAndTheShape) {
  SymInt T = SymInt::Variable("T", 1, 16, 5), pos = SymInt::Variable("pos", 0, 15, 14);
  Tensor x = Tensor::Zeros({T, 4}), c = Tensor::Zeros({16, 4});
  EXPECT_EQ(ErrorOf([&] { x + Tensor::Zeros({5, 4}); }),
            "add: shapes (T, 4) and (5, 4) do not broadcast; expected equal dims or 1 in each "
            "position");
  EXPECT_EQ(ErrorOf([&] { c.Slice(0, pos, pos + T); }),
            "shrink: [pos, pos+T) = [14, 19) of size 16 of dim 0 of shape (16, 4); expected 0 <= "
            "begin <= end <= size");
  EXPECT_EQ(ErrorOf([&] { x.Reshape({T, 3}); }),
            "reshape: shape (T, 4) (T*4 elements) to (T, 3) (T*3 elements); expected the same "
            "number of elements");
  EXPECT_EQ(ErrorOf([&] { x.Slice(0, 0, T, 2); }),
            "slice: step 2 with a symbolic bound or dim (0:T of T); expected step 1");
}

TEST(SymbolicTensor, GradientsEqualTheFixedShapeOnes) {
  std::vector<float> wv = Values(12, 0.25f);
  for (int64_t n : {3, 6}) {
    SymInt T = SymInt::Variable("T", 1, 8, n);
    std::vector<std::vector<float>> grads;
    std::vector<float> losses;
    for (const TensorShape& shape : {TensorShape{T, 4}, TensorShape{n, 4}}) {
      Tensor w = Tensor::FromVector(wv, {4, 3}).RequiresGrad();
      Tensor x = Tensor::FromVector(Values(4 * n), shape);
      Tensor loss = (x.Matmul(w).Tanh().Softmax(0) * x.Slice(1, 0, 3)).Mean();
      loss.Backward();
      losses.push_back(loss.Item<float>());
      grads.push_back(w.grad().ToVector<float>());
    }
    EXPECT_NEAR(losses[0], losses[1], 1e-6);
    for (size_t i = 0; i < grads[0].size(); ++i) EXPECT_NEAR(grads[0][i], grads[1][i], 1e-6) << i;
  }
}

}  // namespace
}  // namespace uopc
