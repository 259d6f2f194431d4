// Gather by rule: a sum of a one-hot times a table collapses into a load at the index, so
// that Embedding and CrossEntropy's pick of the target read one row per token instead of
// looping over the vocabulary (passes/reduce_collapse.h).
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace uopc
