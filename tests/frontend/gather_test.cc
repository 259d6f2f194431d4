// Gather by rule: a sum of a one-hot times a table collapses into a load at the index, so
// that Embedding and CrossEntropy's pick of the target read one row per token instead of
// looping over the vocabulary (passes/reduce_collapse.h).
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

#include "frontend/autograd.h"
#include "frontend/captured_step.h"
#include "frontend/error.h"
#include "frontend/nn.h"
#include "frontend/realize.h"
#include "frontend/tensor.h"
#include "tests/testing/error_of.h"

namespace uopc {
namespace {

constexpr int64_t kVocab = 97;  // (a length no other loop of these programs has)

// Whether a kernel computes an index check (frontend/index_check.h): it stores an unsigned
// value, the index's largest.
bool IsIndexCheck(const UOp& kernel) {
  for (const UOp& u : kernel.Toposort())
    if (u.is(Ops::STORE) && IsUnsigned(u.src(1).dtype())) return true;
  return false;
}

// The kernels that realizing `ts` runs, but for the index checks (which `checks` counts).
std::vector<UOp> KernelsOf(const std::vector<Tensor>& ts, int* checks = nullptr) {
  std::vector<std::shared_ptr<LazyData>> d;
  for (const Tensor& t : ts) d.push_back(t.data());
  absl::StatusOr<std::shared_ptr<const Plan>> p = Runtime::Get().PlanFor(d);
  EXPECT_TRUE(p.ok()) << p.status();
  std::vector<UOp> out;
  if (checks) *checks = 0;
  if (p.ok())
    for (const Plan::Kernel* k : (*p)->kernels()) {
      if (!IsIndexCheck(k->ast))
        out.push_back(k->ast);
      else if (checks)
        ++*checks;
    }
  return out;
}

using ::uopc::testing::ErrorOf;

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

// An index outside the table is found when the plan runs (by a check it computes beside
// the gather: one more kernel, a max over the index), named, and nothing is read out of
// bounds (the sanitizer builds run this); what was read there is 0.
TEST(Gather, AnIndexOutsideTheTableIsAnErrorNamingItAndNothingIsReadOutOfBounds) {
  Embedding wte(kVocab, 4);
  for (int32_t bad : {-1, static_cast<int32_t>(kVocab), 1 << 30, INT32_MIN}) {
    Tensor y = wte.Forward(Tensor::FromVector(std::vector<int32_t>{3, bad, 5}, {3}));
    int checks = 0;
    KernelsOf({y}, &checks);
    EXPECT_EQ(checks, 1);
    EXPECT_EQ(
        ErrorOf([&] { y.Realize(); }),
        absl::StrCat("index_select: dim 0 of f32 (97, 4): an index of ", bad, ", outside [0, 97)"));
    std::vector<float> got = y.ToVector<float>(), w = wte.weight.ToVector<float>();  // (realized)
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(got[d], w[3 * 4 + d]);
      EXPECT_EQ(got[4 + d], 0.0f);
      EXPECT_EQ(got[8 + d], w[5 * 4 + d]);
    }
  }
  // an unsigned index, and one of i64, as they are
  Tensor x = Tensor::Randn({4, 2});
  EXPECT_EQ(ErrorOf([&] {
              const std::vector<uint32_t> bad = {4000000000u};
              x.IndexSelect(0, Tensor::FromVector(bad, {1}, DType::kU32)).Realize();
            }),
            "index_select: dim 0 of f32 (4, 2): an index of 4000000000, outside [0, 4)");
  EXPECT_EQ(ErrorOf([&] {
              x.Gather(1, Tensor::FromVector(std::vector<int64_t>{0, -5}, {1, 2})).Realize();
            }),
            "gather: dim 1 of f32 (4, 2): an index of -5, outside [0, 2)");
  try {  // (OUT_OF_RANGE, as PyTorch's IndexError)
    wte.Forward(Tensor::FromVector(std::vector<int32_t>{-1}, {1})).Realize();
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kOutOfRange);
  }
  // an empty index on an empty dim is no error (PyTorch's neither)
  EXPECT_EQ(Tensor::Zeros({0, 3}).IndexSelect(0, Tensor::Zeros({0}, DType::kI32)).numel(),
            SymInt(0));
  EXPECT_NO_THROW(Tensor::Zeros({0, 3}).IndexSelect(0, Tensor::Zeros({0}, DType::kI32)).Realize());
  // indices in range pass, and a check runs once (not again when its tensor is read)
  Tensor ok = wte.Forward(Tensor::FromVector(std::vector<int32_t>{0, kVocab - 1}, {2}));
  EXPECT_NO_THROW(ok.Realize());
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
  // a target outside the classes, named (PyTorch: "Target 97 is out of bounds")
  EXPECT_EQ(ErrorOf([&] {
              const std::vector<int32_t> bad = {0, 5, 96, 13, 97, 50};
              logits.CrossEntropy(Tensor::FromVector(bad, {6})).Realize();
            }),
            "cross_entropy: dim 1 of f32 (6, 97): an index of 97, outside [0, 97)");
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
  int checks = 0;
  std::vector<UOp> kernels = KernelsOf({pool}, &checks);
  EXPECT_EQ(kernels.size(), 1u);
  EXPECT_EQ(checks, 1);
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
// has; an index outside the dim is an error, and writes nowhere, in either.
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
  Tensor out = x.Scatter(0, index, src);
  EXPECT_EQ(ErrorOf([&] { out.Realize(); }),
            "scatter: dim 0 of f32 (97, 3): an index of -1, outside [0, 97)");
  EXPECT_EQ(out.ToVector<float>(), want);
  EXPECT_EQ(x.ToVector<float>(), xv);  // (out of place)
  x.ScatterInPlace(0, index, src);
  std::vector<UOp> kernels = KernelsOf({x});
  EXPECT_EQ(kernels.size(), 1u);
  EXPECT_LE(LongestLoop(kernels), 3);
  EXPECT_EQ(ErrorOf([&] { x.Realize(); }),
            "scatter: dim 0 of f32 (97, 3): an index of -1, outside [0, 97)");
  EXPECT_EQ(x.ToVector<float>(), want);  // (the write done once, its bad indices dropped)
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
// differences of a smooth function of it), and out-of-range indices are errors that read 0
// and add nowhere, the gradient's too.
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
  Tensor picked = y.Gather(0, Tensor::FromVector(std::vector<int32_t>{2, -1, 3}, {3}));
  EXPECT_EQ(ErrorOf([&] { picked.Realize(); }),
            "gather: dim 0 of f32 (3): an index of -1, outside [0, 3)");
  EXPECT_EQ(picked.ToVector<float>(), (std::vector<float>{3, 0, 0}));
  Tensor added = y.ScatterAdd(0, Tensor::FromVector(std::vector<int32_t>{9, 0, -4}, {3}), y);
  EXPECT_EQ(ErrorOf([&] { added.Realize(); }),
            "scatter_add: dim 0 of f32 (3): an index of -4, outside [0, 3)");
  EXPECT_EQ(added.ToVector<float>(), (std::vector<float>{3, 2, 3}));  // (2 added at 0)
  // the gradient alone (the forward never realized) checks the index it reads
  Tensor w = Tensor::Randn({3}).RequiresGrad();
  Tensor loss = w.Gather(0, Tensor::FromVector(std::vector<int32_t>{0, 7}, {2})).Sum();
  Tensor g = Gradients(loss, {w})[0];
  EXPECT_EQ(ErrorOf([&] { g.Realize(); }),
            "gather: dim 0 of f32 (3): an index of 7, outside [0, 3)");
  EXPECT_EQ(g.ToVector<float>(), (std::vector<float>{1, 0, 0}));
}

// An index checked against a dim of symbolic size is checked against its size at each run,
// by a captured step too.
TEST(Gather, IndicesAreCheckedAgainstTheDimAtEachRun) {
  const SymInt n = SymInt::Variable("gather_n", 1, 16, 4);
  Tensor table = Tensor::Arange(0, 16, 1).Float().Realize();
  Tensor index = Tensor::FromVector(std::vector<int32_t>{3}, {1}).Realize();
  std::vector<Tensor> out;
  CapturedStep step(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{table.Slice(0, 0, n).Gather(0, in[0])};
      },
      {index}, &out);
  EXPECT_EQ(out[0].ToVector<float>(), std::vector<float>{3});
  const Tensor seven = Tensor::FromVector(std::vector<int32_t>{7}, {1});
  EXPECT_EQ(ErrorOf([&] { step.Run({seven}); }),
            "gather: dim 0 of f32 (gather_n): an index of 7, outside [0, 4)");
  EXPECT_EQ(step.Run({seven}, {{"gather_n", 8}})[0].ToVector<float>(), std::vector<float>{7});
  EXPECT_EQ(ErrorOf([&] { step.Run({Tensor::FromVector(std::vector<int32_t>{-2}, {1})}); }),
            "gather: dim 0 of f32 (gather_n): an index of -2, outside [0, 4)");
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
