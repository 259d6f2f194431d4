// The facts of the seed chapter, section 15.2 ("Symbolic shapes"), exactly as printed there.
#include <gtest/gtest.h>

#include "core/bounds.h"
#include "core/symbolic/simplify.h"
#include "core/uir.h"
#include "core/uop.h"

namespace uopc {
namespace {

constexpr int64_t kRows = 4, kMaxN = 8;

struct Loops {
  UOp i = UOp::Range(kRows, 0);
  // n = LEN.index(0).load(): a trip count read from memory at run time
  UOp n = UOp::Buffer(DType::kI32, 1, 1).Index(0).Load();
  UOp j = UOp::Range(n, 1);
};

std::pair<int64_t, int64_t> Bounds(const UOp& u) { return {VMin(u), VMax(u)}; }

TEST(Seed15_2, LoadedTripCountHasNoUsefulBounds) {
  Loops l;
  EXPECT_EQ(Bounds(l.j), std::make_pair(int64_t{0}, int64_t{2147483646}));
  EXPECT_EQ(Bounds(l.i * kMaxN + l.j), std::make_pair(int64_t{-2147483648}, int64_t{2147483647}));
}

TEST(Seed15_2, StaticEndDivisionFoldsToTheOuterLoop) {
  Loops l;
  UOp j8 = UOp::Range(kMaxN, 1);
  EXPECT_EQ(ToUir(Simplify((l.i * kMaxN + j8).FloorDiv(kMaxN))),
            "%0 = range 4 : idx=0 kind=loop\n");
}

TEST(Seed15_2, DynamicEndDivisionKeepsTheInnerDivision) {
  Loops l;
  EXPECT_EQ(ToUir(Simplify((l.i * kMaxN + l.j).FloorDiv(kMaxN))),
            "%0 = range 4 : idx=0 kind=loop\n"
            "%1 = buffer 1 : dtype=i32 slot=1\n"
            "%2 = index %1, 0\n"
            "%3 = load %2\n"
            "%4 = range %3 : idx=1 kind=loop\n"
            "%5 = floordiv %4, 8\n"
            "%6 = add %0, %5\n");
}

struct VarLoops {
  UOp i = UOp::Range(kRows, 0);
  UOp n = UOp::Var("n", 1, 8);  // sequence length: 1 <= n <= 8
  UOp j = UOp::Range(n, 1);
};

TEST(Seed15_2, BoundedVariableBoundsTheLoop) {
  VarLoops v;
  EXPECT_EQ(Bounds(v.j), std::make_pair(int64_t{0}, int64_t{7}));
}

TEST(Seed15_2, BoundedVariableDivIsTheOuterLoop) {
  VarLoops v;
  EXPECT_EQ(ToUir(Simplify((v.i * 8 + v.j).FloorDiv(8))), "%0 = range 4 : idx=0 kind=loop\n");
}

TEST(Seed15_2, BoundedVariableModIsTheInnerLoop) {
  VarLoops v;
  EXPECT_EQ(ToUir(Simplify((v.i * 8 + v.j).Mod(8))),
            "%0 = var : name=n lo=1 hi=8\n"
            "%1 = range %0 : idx=1 kind=loop\n");
}

// Interval arithmetic alone cannot see j < n; the relational RANGE rule can (exercise 4).
TEST(Seed15_2, RangeIsLessThanItsVarEnd) {
  VarLoops v;
  EXPECT_EQ(ToUir(Simplify(v.j.Lt(v.n))), "%0 = const true\n");
}

TEST(Seed15_2, RangeIsLessThanItsConstEnd) {
  UOp j = UOp::Range(kMaxN, 1);
  EXPECT_EQ(ToUir(Simplify(j.Lt(kMaxN))), "%0 = const true\n");
}

TEST(Seed15_2, RangeIsLessThanItsLoadedEnd) {
  Loops l;
  EXPECT_EQ(ToUir(Simplify(l.j.Lt(l.n))), "%0 = const true\n");
}

// x // n -> 0 when 0 <= x < n, for a symbolic n.
TEST(Seed15_2, SymbolicDivisorOfALoopOverIt) {
  VarLoops v;
  EXPECT_EQ(ToUir(Simplify(v.j.FloorDiv(v.n))), "%0 = const 0\n");
  EXPECT_EQ(Simplify(v.j.Mod(v.n)), v.j);
}

// Exercise 1: with LEN replaced by a CONST 8, i*8+j has tight bounds.
TEST(Seed15_2, ConstEndGivesTightBounds) {
  UOp i = UOp::Range(kRows, 0), j = UOp::Range(kMaxN, 1);
  EXPECT_EQ(Bounds(i * kMaxN + j), std::make_pair(int64_t{0}, int64_t{31}));
}

}  // namespace
}  // namespace uopc
