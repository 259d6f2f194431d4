#include "core/interpreter.h"

#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "passes/linearize.h"
#include "tests/testing/seed_program.h"

namespace uopc {
namespace {

std::vector<float> RunSeed(int length) {
  std::vector<UOp> program = *Linearize(testing::SeedTripCountKernel());
  std::vector<float> x(32), out(4, -1);
  std::iota(x.begin(), x.end(), 0.0f);
  int32_t n = length;
  absl::Status s = Interpret(
      program, {{x.data(), DType::kF32, 32}, {&n, DType::kI32, 1}, {out.data(), DType::kF32, 4}});
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(Interpreter, SeedProgramWithTwoTripCounts) {
  EXPECT_EQ(RunSeed(3), (std::vector<float>{3, 27, 51, 75}));
  EXPECT_EQ(RunSeed(8), (std::vector<float>{28, 92, 156, 220}));
  EXPECT_EQ(RunSeed(0), (std::vector<float>{0, 0, 0, 0}));  // an empty inner loop
}

TEST(Interpreter, VarsAreBoundAndChecked) {
  UOp n = UOp::Var("n", 1, 8);
  UOp out = UOp::Buffer(DType::kI32, 0, 8);
  UOp j = UOp::Range(n, 0);
  std::vector<UOp> p = *Linearize(UOp::Sink({out.Index(j).Store(j * j).End({j})}));
  std::vector<int32_t> o(8, -1);
  ASSERT_TRUE(Interpret(p, {{o.data(), DType::kI32, 8}}, {{"n", 5}}).ok());
  EXPECT_EQ(o, (std::vector<int32_t>{0, 1, 4, 9, 16, -1, -1, -1}));
  EXPECT_EQ(Interpret(p, {{o.data(), DType::kI32, 8}}, {{"n", 9}}).message(),
            "interpret: VAR n = 9 is outside its bounds [1, 8]");
  EXPECT_EQ(Interpret(p, {{o.data(), DType::kI32, 8}}, {}).message(),
            "interpret: no value for VAR n");
}

TEST(Interpreter, OutOfBoundsIsAnErrorNotAWrite) {
  UOp out = UOp::Buffer(DType::kI32, 0, 4);
  UOp i = UOp::Range(5, 0);
  std::vector<UOp> p = *Linearize(UOp::Sink({out.Index(i).Store(i).End({i})}));
  std::vector<int32_t> o(5, -1);
  EXPECT_EQ(Interpret(p, {{o.data(), DType::kI32, 5}}).message(),
            "interpret: index 4 is outside buffer slot 0 (4 elements of i32)");
  EXPECT_EQ(o[4], -1);
}

// A WHERE reads only the operand it picks, as every renderer's `c ? x[i] : 0` does: a read
// past a buffer in the other one is no error (a concatenation's), but its value stored is.
TEST(Interpreter, AReadPastABufferIsAnErrorOnlyWhereItsValueIsUsed) {
  UOp x = UOp::Buffer(DType::kF32, 0, 4), y = UOp::Buffer(DType::kF32, 1, 4);
  UOp out = UOp::Buffer(DType::kF32, 2, 8);
  UOp i = UOp::Range(8, 0);
  UOp cat = i.Lt(4).Where(x.Index(i).Load(), y.Index(i - 4).Load());  // [x, y]
  std::vector<UOp> p = *Linearize(UOp::Sink({out.Index(i).Store(cat).End({i})}));
  std::vector<float> xs{1, 2, 3, 4}, ys{5, 6, 7, 8}, o(8, 0);
  std::vector<BufferRef> refs{
      {xs.data(), DType::kF32, 4}, {ys.data(), DType::kF32, 4}, {o.data(), DType::kF32, 8}};
  ASSERT_TRUE(Interpret(p, refs).ok());
  EXPECT_EQ(o, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  // a read past x in one iteration leaves the next iteration's values alone
  UOp first = i.Lt(1).Where(x.Index(i - 1).Load(), UOp::Const(DType::kF32, 0.0));
  UOp later = i.Lt(1).Where(UOp::Const(DType::kF32, 9.0), first + UOp::Const(DType::kF32, 1.0));
  p = *Linearize(UOp::Sink({out.Index(i).Store(later).End({i})}));
  ASSERT_TRUE(Interpret(p, {{xs.data(), DType::kF32, 4}, {}, {o.data(), DType::kF32, 8}}).ok())
      << Interpret(p, refs);
  EXPECT_EQ(o[0], 9.0f);
  EXPECT_EQ(o[1], 1.0f);  // (x's read not picked: 0 + 1)
  // the value of a read past x, through an ALU op, stored: the read's error
  UOp bad = x.Index(i).Load() * UOp::Const(DType::kF32, 2.0);
  p = *Linearize(UOp::Sink({out.Index(i).Store(bad).End({i})}));
  EXPECT_EQ(Interpret(p, refs).message(),
            "interpret: index 4 is outside buffer slot 0 (4 elements of f32)");
}

TEST(Interpreter, BindingsMustMatch) {
  UOp out = UOp::Buffer(DType::kF32, 1, 4);
  std::vector<UOp> p = *Linearize(UOp::Sink({out.Index(0).Store(UOp::Const(DType::kF32, 1.0))}));
  std::vector<int32_t> o(4);
  EXPECT_EQ(Interpret(p, {}).message(), "interpret: no memory bound to buffer slot 1");
  EXPECT_EQ(Interpret(p, {{}, {o.data(), DType::kI32, 4}}).message(),
            "interpret: buffer slot 1 is 4 x f32 but the memory bound to it is 4 x i32");
}

TEST(Interpreter, HalfPrecisionStorageAndIntegerSemantics) {
  UOp h = UOp::Buffer(DType::kF16, 0, 2), b = UOp::Buffer(DType::kBF16, 1, 1),
      q = UOp::Buffer(DType::kI8, 2, 2);
  UOp v = h.Index(0).Load().Cast(DType::kF32) * UOp::Const(DType::kF32, 3.0);
  std::vector<UOp> p = *Linearize(UOp::Sink({
      h.Index(1).Store(v.Cast(DType::kF16)),
      b.Index(0).Store(v.Cast(DType::kBF16)),
      q.Index(0).Store(UOp::ConstInt(DType::kI8, -7).FloorDiv(UOp::ConstInt(DType::kI8, 2))),
      q.Index(1).Store(UOp::ConstInt(DType::kI8, 127) + UOp::ConstInt(DType::kI8, 1)),
  }));
  uint16_t hv[2] = {0x3555, 0}, bv = 0;  // f16 0.333251953125
  int8_t qv[2] = {0, 0};
  ASSERT_TRUE(
      Interpret(p, {{hv, DType::kF16, 2}, {&bv, DType::kBF16, 1}, {qv, DType::kI8, 2}}).ok());
  EXPECT_EQ(hv[1], 0x3c00u);  // 0.999755859375 is a tie in f16: to even, 1.0
  EXPECT_EQ(bv, 0x3f80u);     // rounds to 1.0 in bf16
  EXPECT_EQ(qv[0], -4);
  EXPECT_EQ(qv[1], -128);
}

}  // namespace
}  // namespace uopc
