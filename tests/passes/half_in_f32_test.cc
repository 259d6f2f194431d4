// HalfInF32: a kernel's chain of half ops becomes the f32 ops with one rounding where the
// value leaves it (what a chain computes, bit for bit, is tested through the Tensor API in
// tests/frontend/mixed_precision_test).
#include "passes/half_in_f32.h"

#include <gtest/gtest.h>

namespace uopc {
namespace {

int Count(const UOp& k, bool (*is)(const UOp&)) {
  int n = 0;
  for (const UOp& u : k.Toposort()) n += is(u);
  return n;
}

bool HalfArithmetic(const UOp& u) {
  return IsHalf(u.dtype()) && IsAlu(u.op()) && !u.is(Ops::CAST) && !u.is(Ops::BITCAST);
}
bool RoundsToBf16(const UOp& u) { return u.is(Ops::CAST) && u.dtype() == DType::kBF16; }

TEST(HalfInF32, AChainOfHalfOpsIsCarriedInF32AndRoundedOnceWhereItIsStored) {
  UOp a = UOp::Buffer(DType::kBF16, 0, 8), out = UOp::Buffer(DType::kBF16, 1, 8);
  UOp i = UOp::Range(8, 0);
  UOp v = a.Index(i).Load();
  UOp k = UOp::Sink({out.Index(i).Store((v * v + v) * v).End({i})});
  ASSERT_EQ(Count(k, HalfArithmetic), 3);
  UOp carried = HalfInF32Kernel(k);
  EXPECT_EQ(Count(carried, HalfArithmetic), 0);
  EXPECT_EQ(Count(carried, RoundsToBf16), 1);
  for (const UOp& u : carried.Toposort())
    if (u.is(Ops::STORE)) EXPECT_TRUE(RoundsToBf16(u.src(1)));
}

TEST(HalfInF32, AValueReadOutsideTheChainIsRoundedThereAndF32KernelsAreUnchanged) {
  UOp a = UOp::Buffer(DType::kBF16, 0, 8), out = UOp::Buffer(DType::kBool, 1, 8);
  UOp i = UOp::Range(8, 0);
  UOp v = a.Index(i).Load();
  // a comparison reads the half value (v + v rounded), as an f32 cast would
  UOp compared = UOp::Sink({out.Index(i).Store((v + v).Lt(v)).End({i})});
  UOp carried = HalfInF32Kernel(compared);
  EXPECT_EQ(Count(carried, HalfArithmetic), 0);
  EXPECT_EQ(Count(carried, RoundsToBf16), 1);
  UOp f = UOp::Buffer(DType::kF32, 0, 8), fout = UOp::Buffer(DType::kF32, 1, 8);
  UOp w = f.Index(i).Load();
  UOp f32 = UOp::Sink({fout.Index(i).Store(w * w + w).End({i})});
  EXPECT_EQ(HalfInF32Kernel(f32), f32);
}

}  // namespace
}  // namespace uopc
