// Gather by rule: a sum of a one-hot times a table collapses into a load at the index, so
// that Embedding and CrossEntropy's pick of the target read one row per token instead of
// looping over the vocabulary (passes/reduce_collapse.h).
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "frontend/error.h"
#include "frontend/nn.h"
#include "frontend/realize.h"
#include "frontend/tensor.h"

namespace uopc {
namespace {

constexpr int64_t kVocab = 97;  // (a length no other loop of these programs has)

std::vector<UOp> KernelsOf(const std::vector<Tensor>& ts) {
  std::vector<std::shared_ptr<LazyData>> d;
  for (const Tensor& t : ts) d.push_back(t.data());
  absl::StatusOr<std::shared_ptr<const Plan>> p = Runtime::Get().PlanFor(d);
  EXPECT_TRUE(p.ok()) << p.status();
  std::vector<UOp> out;
  if (p.ok())
    for (const Plan::Kernel* k : (*p)->kernels()) out.push_back(k->ast);
  return out;
}

// How many loops of length kVocab the kernels have.
int VocabLoops(const std::vector<UOp>& kernels) {
  int n = 0;
  for (const UOp& k : kernels)
    for (const UOp& u : k.Toposort()) n += u.is(Ops::RANGE) && u.src(0).ConstIntValue() == kVocab;
  return n;
}

// How many loops of length kVocab have a load of an index (an i32) in their body: the
// work of a one-hot matmul, tokens x vocabulary.
int VocabLoopsReadingIndices(const std::vector<UOp>& kernels) {
  int n = 0;
  for (const UOp& k : kernels)
    for (const UOp& end : k.Toposort()) {
      if (!end.is(Ops::END)) continue;
      bool vocab = false, reads = false;
      for (size_t i = 1; i < end.src().size(); ++i)
        vocab |= end.src(i).src(0).ConstIntValue() == kVocab;
      for (const UOp& u : end.src(0).Toposort())
        reads |= u.is(Ops::LOAD) && u.dtype() == DType::kI32;
      n += vocab && reads;
    }
  return n;
}

TEST(Gather, EmbeddingReadsOneRowPerTokenWithNoLoopOverTheVocabulary) {
  Embedding wte(kVocab, 8);
  Tensor idx = Tensor::FromVector(std::vector<int32_t>{3, 0, 96, 41, 3}, {5});
  Tensor y = wte.Forward(idx);
  EXPECT_EQ(VocabLoops(KernelsOf({y})), 0);
  std::vector<float> w = wte.weight.ToVector<float>(), got = y.ToVector<float>();
  const int32_t rows[] = {3, 0, 96, 41, 3};
  for (int t = 0; t < 5; ++t)
    for (int d = 0; d < 8; ++d) EXPECT_EQ(got[t * 8 + d], w[rows[t] * 8 + d]) << t << "," << d;
}

TEST(Gather, AnIndexOutsideTheTableReadsZerosAndNothingOutOfBounds) {
  Embedding wte(kVocab, 4);
  Tensor y = wte.Forward(Tensor::FromVector(std::vector<int32_t>{-1, kVocab, 1 << 30}, {3}));
  for (float v : y.ToVector<float>()) EXPECT_EQ(v, 0.0f);  // (as the one-hot's zero row)
}

TEST(Gather, CrossEntropyPicksTheTargetWithoutALoopOverTheVocabulary) {
  Tensor logits = Tensor::Randn({6, kVocab});
  const std::vector<int32_t> targets = {0, 5, 96, 13, 5, 50};
  Tensor loss = logits.CrossEntropy(Tensor::FromVector(targets, {6}));
  // the row maximum and the sum of exponentials loop over the vocabulary; the pick does not
  EXPECT_EQ(VocabLoops(KernelsOf({loss})), 2);
  std::vector<float> x = logits.ToVector<float>();
  double want = 0;
  for (int i = 0; i < 6; ++i) {
    const float* row = &x[i * kVocab];
    double m = *std::max_element(row, row + kVocab), s = 0;
    for (int k = 0; k < kVocab; ++k) s += std::exp(row[k] - m);
    want -= (row[targets[i]] - m - std::log(s)) / 6;
  }
  EXPECT_NEAR(loss.Item<float>(), want, 1e-5);
}

TEST(Gather, TheEmbeddingsGradientAddsEachTokensGradientIntoItsRow) {
  Embedding wte(kVocab, 3);
  const std::vector<int32_t> rows = {7, 2, 7, 90};
  Tensor g = Tensor::Randn({4, 3});
  (wte.Forward(Tensor::FromVector(rows, {4})) * g).Sum().Backward();
  // rows of zeros, then each token's gradient added into its row: no loop over the
  // vocabulary for each token
  EXPECT_EQ(VocabLoopsReadingIndices(KernelsOf({wte.weight.grad()})), 0);
  std::vector<float> want(kVocab * 3, 0.0f), gv = g.ToVector<float>();
  for (int t = 0; t < 4; ++t)
    for (int d = 0; d < 3; ++d) want[rows[t] * 3 + d] += gv[t * 3 + d];
  std::vector<float> got = wte.weight.grad().ToVector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << i;
}

// Gather, IndexSelect and ScatterAdd against plain loops, on dim 0 and dim 1.
TEST(Gather, GatherIndexSelectAndScatterAddAsPlainLoops) {
  Tensor x = Tensor::Randn({kVocab, 3});
  const std::vector<float> xv = x.ToVector<float>();
  // dim 0: out[i][j] = x[index[i][j]][j]
  const std::vector<int32_t> rows = {5, 0, 96, 7, 7, 1, 40, 2};
  Tensor g = x.Gather(0, Tensor::FromVector(rows, {4, 2}));  // (the first 2 of 3 columns)
  EXPECT_EQ(VocabLoops(KernelsOf({g})), 0);
  std::vector<float> gv = g.ToVector<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(gv[i * 2 + j], xv[rows[i * 2 + j] * 3 + j]) << i << j;
  // dim 1 of the transpose: the same picks
  Tensor gt = x.Transpose().Gather(1, Tensor::FromVector(rows, {4, 2}).Transpose());
  EXPECT_EQ(gt.Transpose().ToVector<float>(), gv);
  // index_select: whole rows
  Tensor s = x.IndexSelect(0, Tensor::FromVector(std::vector<int32_t>{96, 3}, {2}));
  EXPECT_EQ(s.ToVector<float>(), (std::vector<float>{xv[288], xv[289], xv[290], xv[9], xv[10],
                                                     xv[11]}));
  // scatter_add: into rows, repeats adding up
  Tensor src = Tensor::Randn({4, 3});
  const std::vector<int32_t> at = {2, 2, 0, 96, 2, 5, 1, 1, 1, 7, 7, 7};
  Tensor into = x.ScatterAdd(0, Tensor::FromVector(at, {4, 3}), src);
  std::vector<float> want = xv, sv = src.ToVector<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) want[at[i * 3 + j] * 3 + j] += sv[i * 3 + j];
  std::vector<float> got = into.ToVector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << i;
  EXPECT_EQ(VocabLoopsReadingIndices(KernelsOf({x.ScatterAdd(0, Tensor::FromVector(at, {4, 3}),
                                                             src)})),
            0);
}

// Largest loop length in the kernels.
int64_t LongestLoop(const std::vector<UOp>& kernels) {
  int64_t n = 0;
  for (const UOp& k : kernels)
    for (const UOp& u : k.Toposort())
      if (u.is(Ops::RANGE)) n = std::max(n, u.src(0).ConstIntValue().value_or(0));
  return n;
}

// A scatter-add in place writes only the rows it adds to: one kernel whose loops run over
// the index (2 x 3), none over the tensor (97 x 3); the other rows keep their values, even
// ones no plan wrote (the tensor is not copied first).
TEST(Gather, ScatterAddInPlaceTouchesOnlyTheIndexedRows) {
  Tensor pool = Tensor::Randn({kVocab, 3}).Realize();
  const std::vector<float> before = pool.ToVector<float>();
  const std::vector<int32_t> at = {4, 96, 4, 0, 0, 0};
  Tensor src = Tensor::Randn({2, 3}).Realize();
  pool.ScatterAddInPlace(0, Tensor::FromVector(at, {2, 3}), src);
  std::vector<UOp> kernels = KernelsOf({pool});
  EXPECT_EQ(kernels.size(), 1u);
  EXPECT_LE(LongestLoop(kernels), 3);
  std::vector<float> want = before, sv = src.ToVector<float>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) want[at[i * 3 + j] * 3 + j] += sv[i * 3 + j];
  EXPECT_EQ(pool.ToVector<float>(), want);
  // again, on the dim 1 of a (3, 97) tensor, with what was read before the write kept old
  Tensor t = Tensor::Randn({3, kVocab}).Realize();
  std::vector<float> tv = t.ToVector<float>();
  Tensor old_sum = t.Sum();
  t.ScatterAddInPlace(1, Tensor::FromVector(std::vector<int32_t>{5, 5, 7}, {3, 1}),
                      Tensor::Ones({3, 1}));
  Tensor new_sum = t.Sum();
  Tensor::RealizeAll({&old_sum, &new_sum});
  double s = 0;
  for (float v : tv) s += v;
  EXPECT_NEAR(old_sum.Item<float>(), s, 1e-3);
  EXPECT_NEAR(new_sum.Item<float>(), s + 3, 1e-3);
  tv[5] += 1, tv[kVocab + 5] += 1, tv[2 * kVocab + 7] += 1;
  EXPECT_EQ(t.ToVector<float>(), tv);
}

// Scatter sets rows (PyTorch's scatter): out of place, and in place costing what the index
// has; an index outside the dim writes nowhere, in either.
TEST(Gather, ScatterSetsRowsAndInPlaceTouchesOnlyThem) {
  Tensor x = Tensor::Randn({kVocab, 3}).Realize();
  const std::vector<float> xv = x.ToVector<float>();
  const std::vector<int32_t> at = {4, 96, -1, 0, kVocab, 2};
  Tensor src = Tensor::Randn({2, 3}).Realize();
  const std::vector<float> sv = src.ToVector<float>();
  std::vector<float> want = xv;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      if (at[i * 3 + j] >= 0 && at[i * 3 + j] < kVocab) want[at[i * 3 + j] * 3 + j] = sv[i * 3 + j];
  const Tensor index = Tensor::FromVector(at, {2, 3});
  EXPECT_EQ(x.Scatter(0, index, src).ToVector<float>(), want);
  EXPECT_EQ(x.ToVector<float>(), xv);  // (out of place)
  x.ScatterInPlace(0, index, src);
  std::vector<UOp> kernels = KernelsOf({x});
  EXPECT_EQ(kernels.size(), 1u);
  EXPECT_LE(LongestLoop(kernels), 3);
  EXPECT_EQ(x.ToVector<float>(), want);
  // the exact bits, -0.0 and NaN too (a set, not an add into zeros)
  Tensor z = Tensor::Ones({4}).Realize();
  z.ScatterInPlace(0, Tensor::FromVector(std::vector<int32_t>{1, 3}, {2}),
                   Tensor::FromVector(std::vector<float>{-0.0f, NAN}, {2}));
  std::vector<float> zv = z.ToVector<float>();
  EXPECT_EQ(zv[0], 1.0f);
  EXPECT_TRUE(std::signbit(zv[1]) && zv[1] == 0.0f);
  EXPECT_TRUE(std::isnan(zv[3]));
  EXPECT_THROW(x.Scatter(0, index, Tensor::Randn({2, 2})), Error);
}

// The gradient of a gather is a scatter-add of the output's gradient (against central
// differences of a smooth function of it), and out-of-range indices read 0 and add nowhere.
TEST(Gather, GradientsAndIndicesOutsideTheDim) {
  Tensor x = Tensor::Randn({6, 2}).RequiresGrad();
  Tensor index = Tensor::FromVector(std::vector<int32_t>{1, 4, 1, 0, 5, 4}, {3, 2});
  auto f = [&](const Tensor& t) { return (t.Gather(0, index).Square() * 0.5).Sum(); };
  f(x).Backward();
  std::vector<float> grad = x.grad().ToVector<float>(), xv = x.ToVector<float>();
  for (int i = 0; i < 12; ++i) {
    std::vector<float> up = xv, down = xv;
    up[i] += 1e-2f, down[i] -= 1e-2f;
    const double numeric = (f(Tensor::FromVector(up, {6, 2})).Item<float>() -
                            f(Tensor::FromVector(down, {6, 2})).Item<float>()) / 2e-2;
    EXPECT_NEAR(grad[i], numeric, 2e-3) << i;
  }
  Tensor y = Tensor::FromVector(std::vector<float>{1, 2, 3}, {3});
  EXPECT_EQ(y.Gather(0, Tensor::FromVector(std::vector<int32_t>{2, -1, 3}, {3})).ToVector<float>(),
            (std::vector<float>{3, 0, 0}));
  EXPECT_EQ(y.ScatterAdd(0, Tensor::FromVector(std::vector<int32_t>{9, 0, -4}, {3}), y)
                .ToVector<float>(),
            (std::vector<float>{3, 2, 3}));  // (2 added at 0; 9 and -4 nowhere)
}

TEST(Gather, MismatchedShapesAndFloatIndicesAreClearErrors) {
  Tensor x = Tensor::Randn({4, 3});
  EXPECT_THROW(x.Gather(0, Tensor::Randn({2, 3})), Error);  // (a float index)
  EXPECT_THROW(x.Gather(0, Tensor::Zeros({2, 3, 1}, DType::kI32)), Error);
  EXPECT_THROW(x.Gather(0, Tensor::Zeros({2, 5}, DType::kI32)), Error);
  EXPECT_THROW(x.IndexSelect(0, Tensor::Zeros({2, 2}, DType::kI32)), Error);
  EXPECT_THROW(x.ScatterAdd(0, Tensor::Zeros({2, 3}, DType::kI32), Tensor::Randn({2, 2})), Error);
  try {
    x.Gather(2, Tensor::Zeros({4, 3}, DType::kI32));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gather: axis 2 of a tensor of shape (4, 3)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace uopc
