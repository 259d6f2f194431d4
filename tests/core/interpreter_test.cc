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
