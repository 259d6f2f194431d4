// In-place Assign through a view: the target tensor's buffer is written where the view
// says, nothing else changes, and the plan writes into the buffer it was given.
#include <gtest/gtest.h>

#include "tests/testing/error_of.h"

#include <functional>
#include <string>
#include <vector>

#include "frontend/realize.h"
#include "frontend/tensor.h"

namespace uopc {
namespace {

using testing::ErrorOf;

std::vector<float> Iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(AssignTest, SliceWritesIntoTheBufferInPlace) {
  Tensor c = Tensor::Zeros({2, 4, 3}).Realize();
  Buffer before = c.data()->buffer;
  c.Slice(1, 1, 3).Assign(Tensor::Ones({2, 2, 3}) * 5);
  EXPECT_TRUE(c.data()->buffer.SameMemory(before));
  std::vector<float> v = c.ToVector<float>();
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 4; ++t)
      for (int d = 0; d < 3; ++d)
        EXPECT_EQ(v[(b * 4 + t) * 3 + d], t == 1 || t == 2 ? 5.0f : 0.0f) << b << t << d;
}

TEST(AssignTest, ItIsLazyThenOnePlanOneKernelNoCopyAndTheCacheHitsForNewData) {
  Tensor c = Tensor::Zeros({8, 4}).Realize();
  Tensor v1 = Tensor::FromVector(Iota(4), {1, 4});
  Tensor v2 = (Tensor::FromVector(Iota(4), {1, 4}) * 1.0f).Realize();
  Executor::Stats s0 = Runtime::Get().executor().stats();
  size_t plans = Runtime::Get().plans().size();
  c.Slice(0, 3, 4).Assign(v1);
  EXPECT_EQ(Runtime::Get().executor().stats().plans, s0.plans);  // nothing ran yet
  c.Realize();
  Executor::Stats s1 = Runtime::Get().executor().stats();
  EXPECT_EQ(s1.plans - s0.plans, 1);
  EXPECT_EQ(s1.kernels - s0.kernels, 1);
  EXPECT_EQ(s1.copies - s0.copies, 0);
  EXPECT_EQ(Runtime::Get().plans().size(), plans + 1);
  c.Slice(0, 3, 4).Assign(v2 + 1);  // another value of another structure
  c.Realize();
  c.Slice(0, 3, 4).Assign(v2);  // new data, the first structure: a cache hit
  c.Realize();
  EXPECT_EQ(Runtime::Get().plans().size(), plans + 2);
  EXPECT_EQ(c.Slice(0, 3, 4).ToVector<float>(), Iota(4));
}

TEST(AssignTest, ReadsAfterTheWriteSeeItReadsBeforeSeeTheOldContentsInOnePlan) {
  Tensor c = Tensor::FromVector(Iota(6), {6}).Realize();
  Tensor before = c * 10;  // built before the write
  c.Slice(0, 2, 4).Assign(Tensor::Full({2}, -1));
  Tensor after = c * 10;  // built after it
  Executor::Stats s0 = Runtime::Get().executor().stats();
  Tensor::RealizeAll({&before, &after});
  EXPECT_EQ(Runtime::Get().executor().stats().plans - s0.plans, 1);
  EXPECT_EQ(before.ToVector<float>(), (std::vector<float>{0, 10, 20, 30, 40, 50}));
  EXPECT_EQ(after.ToVector<float>(), (std::vector<float>{0, 10, -10, -10, 40, 50}));
  EXPECT_EQ(c.ToVector<float>(), (std::vector<float>{0, 1, -1, -1, 4, 5}));
}

TEST(AssignTest, SeveralWritesApplyInOrder) {
  Tensor c = Tensor::Zeros({4}).Realize();
  c.Slice(0, 0, 3).Assign(Tensor::Full({3}, 1));
  c.Slice(0, 1, 4).Assign(c.Slice(0, 0, 3) + 1);  // reads the first write
  c.Slice(0, 3, 4).Assign(Tensor::Full({1}, 9));
  EXPECT_EQ(c.ToVector<float>(), (std::vector<float>{1, 2, 2, 9}));
}

// A written tensor that only the realized tensor still holds (what data parallelism's gradient
// bucket is): realizing lets go of it, and its write is still applied, nothing read after free
// (asan).
TEST(AssignTest, AWrittenTensorHeldOnlyByTheRealizedOneIsWrittenSafely) {
  Tensor out;
  {
    Tensor bucket = Tensor::Zeros({4}).Realize();
    bucket.Slice(0, 1, 3).Assign(Tensor::Full({2}, 5));
    out = bucket * 2;
  }
  out.Realize();
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{0, 10, 10, 0}));
}

TEST(AssignTest, ValueThatReadsTheTargetIsReadBeforeItIsWritten) {
  Tensor x = Tensor::FromVector(Iota(6), {6}).Realize();
  x.Slice(0, 0, 5).Assign(x.Slice(0, 1, 6));  // shift left by one
  EXPECT_EQ(x.ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 5}));
  Tensor y = Tensor::FromVector(Iota(6), {6}).Realize();
  y.Slice(0, 1, 6).Assign(y.Slice(0, 0, 5));  // shift right by one
  EXPECT_EQ(y.ToVector<float>(), (std::vector<float>{0, 0, 1, 2, 3, 4}));
  Tensor z = Tensor::FromVector(Iota(4), {4}).Realize();
  z.Slice(0, 0, 4).Flip({0}).Assign(z.Slice(0, 0, 4) + 10 * z.Sum());  // reads all, then writes
  EXPECT_EQ(z.ToVector<float>(), (std::vector<float>{63, 62, 61, 60}));
}

TEST(AssignTest, PermutedReshapedAndSteppedViews) {
  Tensor m = Tensor::Zeros({2, 3}).Realize();
  m.Transpose().Assign(Tensor::FromVector(Iota(6), {3, 2}));
  EXPECT_EQ(m.ToVector<float>(), (std::vector<float>{0, 2, 4, 1, 3, 5}));
  Tensor f = Tensor::Zeros({8}).Realize();
  f.Reshape({2, 4}).Slice(1, 1, 4, 2).Assign(Tensor::Ones({2, 2}));
  EXPECT_EQ(f.ToVector<float>(), (std::vector<float>{0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(AssignTest, AnUnrealizedBaseIsRealizedFirst) {
  Tensor a = Tensor::FromVector(Iota(4), {4});
  Tensor y = a * 2;  // not realized
  y.Slice(0, 0, 2).Assign(Tensor::Full({2}, -1));
  EXPECT_TRUE(y.realized());  // (its buffer is what the write goes to)
  EXPECT_EQ(y.ToVector<float>(), (std::vector<float>{-1, -1, 4, 6}));
  EXPECT_EQ(a.ToVector<float>(), Iota(4));  // the base's inputs are untouched
}

TEST(AssignTest, BadTargetsAndValuesAreRefusedAndLeaveTheTensorUnchanged) {
  Tensor c = Tensor::FromVector(Iota(8), {2, 4}).Realize();
  EXPECT_EQ(ErrorOf([&] { c.Slice(1, 0, 2).Assign(Tensor::Ones({2, 3})); }),
            "assign: a value of shape (2, 3) and dtype f32 to a tensor of shape (2, 2) and "
            "dtype f32");
  EXPECT_EQ(ErrorOf([&] { c.Slice(1, 0, 2).Assign(Tensor::Ones({2, 2}, DType::kI32)); }),
            "assign: a value of shape (2, 2) and dtype i32 to a tensor of shape (2, 2) and "
            "dtype f32");
  EXPECT_EQ(ErrorOf([&] { c.Slice(1, 0, 1).Expand({2, 3}).Assign(Tensor::Ones({2, 3})); }),
            "assign: the target is an expanded view of a tensor of shape (2, 4) (several of "
            "its elements are one element of the tensor); expected a view made by reshape, "
            "permute, shrink, slice or flip");
  EXPECT_EQ(ErrorOf([&] { c.Pad({{0, 0}, {1, 0}}).Assign(Tensor::Ones({2, 5})); }),
            "assign: the target is a padded view of a tensor of shape (2, 4) (some of its "
            "elements are not in the tensor); expected a view made by reshape, permute, "
            "shrink, slice or flip");
  EXPECT_EQ(c.ToVector<float>(), Iota(8));
}

TEST(AssignTest, WholeTensorAssignStillReplacesTheContents) {
  Tensor c = Tensor::FromVector(Iota(4), {4}).Realize();
  c.Assign(Tensor::Full({4}, 7));
  EXPECT_EQ(c.ToVector<float>(), (std::vector<float>(4, 7)));
}

}  // namespace
}  // namespace uopc
