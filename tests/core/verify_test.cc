#include "core/verify.h"

#include <gtest/gtest.h>

namespace uopc {
namespace {

UOp Dims(Ops op, UOp x, std::vector<int64_t> dims) {
  std::vector<UOp> src{x};
  for (int64_t d : dims) src.push_back(UOp::Int(d));
  return UOp::Derived(op, src);
}

std::string Error(const UOp& u) { return std::string(Verify(u).message()); }

TEST(Verify, TheSeedsLoopProgramIsValid) {
  UOp x = UOp::Buffer(DType::kF32, 0, 32), out = UOp::Buffer(DType::kF32, 2, 4);
  UOp n = UOp::Buffer(DType::kI32, 1, 1).Index(0).Load();
  UOp i = UOp::Range(4, 0), j = UOp::Range(n, 1);
  UOp acc = UOp::Alloc(DType::kF32, 0, 1).After({i});
  UOp init = acc.Index(0).Store(UOp::Const(DType::kF32, 0.0));
  UOp accj = acc.After({init, j});
  UOp upd = accj.Index(0).Store(accj.Index(0).Load() + x.Index(i * 8 + j).Load());
  UOp prog = UOp::Sink({out.Index(i).Store(acc.After({upd.End({j})}).Index(0).Load()).End({i})});
  EXPECT_TRUE(Verify(prog).ok()) << Verify(prog);
}

TEST(Verify, MismatchedDTypes) {
  UOp a = UOp::Buffer(DType::kI32, 0, 4), b = UOp::Buffer(DType::kF32, 1, 4);
  EXPECT_EQ(
      Error(UOp::Make(Ops::ADD, DType::kI32, {a, b})),
      "add (i32, operands i32 (4), f32 (4)): operands of different dtypes; expected one dtype");
  EXPECT_EQ(Error(b.Index(0).Store(UOp::Int(1))),
            "store (void, operands f32 (), i32 ()): storing a value of another dtype; expected a "
            "f32 value");
  EXPECT_EQ(Error(UOp::Int(1).Where(UOp::Int(1), UOp::Int(2))),
            "where (i32, operands i32 (), i32 (), i32 ()): a non-bool condition; expected a bool "
            "condition");
  EXPECT_EQ(Error(UOp::Make(Ops::ADD, DType::kF32, {UOp::Int(1), UOp::Int(2)})),
            "add (f32, operands i32 (), i32 ()): dtype f32; expected dtype i32 (derived from the "
            "sources)");
  EXPECT_EQ(Error(UOp::Derived(Ops::SQRT, {UOp::Int(4)})),
            "sqrt (i32, operands i32 ()): a non-float operand; expected a float operand");
}

TEST(Verify, ReshapeMustKeepTheElementCount) {
  UOp t = UOp::Buffer(DType::kF32, 0, 32);
  EXPECT_TRUE(Verify(Dims(Ops::RESHAPE, t, {4, 8})).ok());
  EXPECT_EQ(
      Error(Dims(Ops::RESHAPE, t, {5, 7})),
      "reshape (f32, operands f32 (32), i32 (), i32 ()): reshape to (5, 7) (35 elements) from 32 "
      "elements; expected the same number of elements");
}

TEST(Verify, AxesOutOfRange) {
  UOp t = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, 32), {4, 8});
  EXPECT_EQ(Error(UOp::Derived(Ops::PERMUTE, {t}, Axes{{0, 2}})),
            "permute (f32, operands f32 (4, 8)): axes (0, 2) of a rank-2 operand; expected a "
            "permutation of 0..2-1");
  EXPECT_EQ(Error(UOp::Derived(Ops::REDUCE, {t}, ReduceArg{Ops::ADD, {1, 1}})),
            "reduce (f32, operands f32 (4, 8)): axes (1, 1) of a rank-2 operand; expected distinct "
            "axes in [0, 2)");
  EXPECT_EQ(Error(UOp::Derived(Ops::FLIP, {t}, Axes{{-1}})),
            "flip (f32, operands f32 (4, 8)): axes (-1) of a rank-2 operand; expected distinct "
            "axes in [0, 2)");
}

TEST(Verify, BitcastsKeepTheSizeAndLeaveBoolAlone) {
  EXPECT_TRUE(Verify(UOp::Int(1).Bitcast(DType::kF32)).ok());
  EXPECT_EQ(Error(UOp::Int(1).Bitcast(DType::kF64)),
            "bitcast (f64, operands i32 ()): a bitcast between sizes; expected dtypes of one size");
  EXPECT_EQ(Error(UOp::ConstInt(DType::kU8, 1).Bitcast(DType::kBool)),
            "bitcast (bool, operands u8 ()): a bitcast of bool (which has no bit layout); expected "
            "a CAST");
}

TEST(Verify, DivisionByTheConstantZero) {
  EXPECT_EQ(Error(UOp::Var("x", 0, 9).FloorDiv(0)),
            "floordiv (i32, operands i32 (), i32 ()): division by the constant 0; expected a "
            "nonzero divisor");
}

TEST(Verify, StructuralErrors) {
  EXPECT_EQ(Error(UOp::Make(Ops::ADD, DType::kI32, {UOp::Int(1)})),
            "add (i32, operands i32 ()): 1 sources; expected 2");
  EXPECT_EQ(Error(UOp::Make(Ops::RANGE, DType::kI32, {UOp::Int(4)}, Axes{})),
            "range (i32, operands i32 ()): argument of the wrong kind; expected the argument this "
            "op carries (see core/ops.h)");
  EXPECT_EQ(Error(UOp::Int(3).Index(0)),
            "index (i32, operands i32 (), i32 ()): indexing a const; expected a BUFFER or ALLOC "
            "(possibly behind AFTER)");
  EXPECT_EQ(Error(UOp::Var("n", 5, 1)),
            "var (i32, no operands): bounds [5, 1]; expected lo <= hi, both within i32");
}

// A BARRIER waits for statements, and is one (dtype void).
TEST(Verify, ABarrierWaitsForStatements) {
  UOp shared = UOp::Make(Ops::ALLOC, DType::kF32, {}, ParamArg{0, 4, std::string(kSharedMemory)});
  UOp l = UOp::Range(4, 0, RangeKind::kLocal);
  UOp stored = shared.Index(l).Store(UOp::Const(DType::kF32, 1.0)).End({l});
  EXPECT_TRUE(Verify(UOp::Sink({UOp::Derived(Ops::BARRIER, {stored})})).ok());
  EXPECT_EQ(Error(UOp::Derived(Ops::BARRIER, {UOp::Int(1)})),
            "barrier (void, operands i32 ()): waiting for a const of dtype i32; expected "
            "statements (dtype void)");
  EXPECT_EQ(Error(UOp::Make(Ops::BARRIER, DType::kF32, {stored})),
            "barrier (f32, operands void ()): dtype f32; expected dtype void (derived from the "
            "sources)");
}

TEST(Verify, ShapesOfMovementOps) {
  UOp t = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, 24), {2, 3, 4});
  auto shape = [](const UOp& u) { return ShapeToString(*InferShape(u)); };
  EXPECT_EQ(shape(UOp::Derived(Ops::PERMUTE, {t}, Axes{{2, 0, 1}})), "(4, 2, 3)");
  EXPECT_EQ(shape(UOp::Derived(Ops::REDUCE, {t}, ReduceArg{Ops::MAX, {0, 2}})), "(1, 3, 1)");
  EXPECT_EQ(shape(Dims(Ops::PAD, t, {0, 1, 2, 0, 1, 1})), "(3, 5, 6)");
  EXPECT_EQ(shape(Dims(Ops::SHRINK, t, {0, 1, 1, 3, 0, 4})), "(1, 2, 4)");
  UOp one = Dims(Ops::RESHAPE, t, {2, 1, 12});
  EXPECT_EQ(shape(Dims(Ops::EXPAND, one, {2, 5, 12})), "(2, 5, 12)");
  EXPECT_FALSE(Verify(Dims(Ops::EXPAND, t, {2, 3, 5})).ok());
  EXPECT_FALSE(Verify(Dims(Ops::SHRINK, t, {0, 3, 0, 3, 0, 4})).ok());
  EXPECT_FALSE(Verify(Dims(Ops::PAD, t, {0, 1})).ok());
}

// A collective's result along axis 0: the ranks' parts one after another (all-gather), or
// this rank's part (reduce-scatter); a group's size must divide what it scatters.
TEST(Verify, ShapesOfCollectives) {
  UOp t = Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, 24), {6, 4});
  auto over = [&](CollectiveKind k, int size) {
    return UOp::Derived(Ops::COLLECTIVE, {t}, CollectiveArg{k, k, Ops::ADD, 1, size});
  };
  auto shape = [](const UOp& u) { return ShapeToString(*InferShape(u)); };
  EXPECT_EQ(shape(over(CollectiveKind::kAllReduce, 3)), "(6, 4)");
  EXPECT_EQ(shape(over(CollectiveKind::kAllGather, 3)), "(18, 4)");
  EXPECT_EQ(shape(over(CollectiveKind::kReduceScatter, 3)), "(2, 4)");
  EXPECT_FALSE(Verify(over(CollectiveKind::kReduceScatter, 4)).ok());
  EXPECT_FALSE(Verify(over(CollectiveKind::kAllReduce, 0)).ok());
  EXPECT_FALSE(Verify(UOp::Derived(Ops::COLLECTIVE, {t}, CollectiveArg{.reduce = Ops::MUL})).ok());
}

TEST(Verify, SymbolicReshapeIsCheckedBySimplification) {
  UOp n = UOp::Var("n", 1, 8);
  UOp t = UOp::Derived(Ops::RESHAPE, {UOp::Buffer(DType::kF32, 0, 64), UOp::Int(8), UOp::Int(8)});
  UOp s = UOp::Derived(Ops::SHRINK, {t, UOp::Int(0), n, UOp::Int(0), UOp::Int(8)});  // (n, 8)
  EXPECT_EQ(ShapeToString(*InferShape(s)), "(n, 8)");
  EXPECT_TRUE(Verify(UOp::Derived(Ops::RESHAPE, {s, n * 2, UOp::Int(4)})).ok());
  EXPECT_TRUE(Verify(UOp::Derived(Ops::RESHAPE, {s, n * 8})).ok());
  EXPECT_FALSE(Verify(UOp::Derived(Ops::RESHAPE, {s, n * 4})).ok());
}

}  // namespace
}  // namespace uopc
