// Each family of simplification rules on small examples: input built in C++, expected
// output as a node (hash-consing makes == structural).
#include <cmath>

#include <gtest/gtest.h>

#include "core/symbolic/simplify.h"
#include "core/uir.h"

namespace uopc {
namespace {

UOp S(const UOp& u) { return Simplify(u); }

class Rules : public ::testing::Test {
 protected:
  UOp x = UOp::Var("x", 0, 100), y = UOp::Var("y", -5, 5), n = UOp::Var("n", 1, 8);
  UOp i = UOp::Range(4, 0), j = UOp::Range(n, 1);
  UOp ld = UOp::Buffer(DType::kI32, 0, 4).Index(0).Load();  // unbounded
  UOp T = UOp::ConstBool(DType::kBool, true), F = UOp::ConstBool(DType::kBool, false);
  UOp f = UOp::Buffer(DType::kF32, 1, 4).Index(0).Load();
};

TEST_F(Rules, ConstantFolding) {
  EXPECT_EQ(S(UOp::Int(6) * UOp::Int(7)), UOp::Int(42));
  EXPECT_EQ(S(UOp::Int(-7).FloorDiv(2)), UOp::Int(-4));
  EXPECT_EQ(S(UOp::Int(-7).Mod(2)), UOp::Int(1));
  EXPECT_EQ(S(UOp::Const(DType::kF32, 1.5) * UOp::Const(DType::kF32, 2.0)),
            UOp::Const(DType::kF32, 3.0));
  EXPECT_EQ(S(UOp::Int(3).Lt(4)), T);
  EXPECT_EQ(S(UOp::Int(3).Cast(DType::kF16)), UOp::Const(DType::kF16, 3.0));
}

TEST_F(Rules, DivisionByConstantZeroIsNotFolded) {
  UOp d = UOp::Int(1).FloorDiv(0);
  EXPECT_EQ(S(d), d);
}

TEST_F(Rules, BoundsFoldToConstants) {
  EXPECT_EQ(S(i.FloorDiv(4)), UOp::Int(0));
  EXPECT_EQ(S(i.Lt(7)), T);
  EXPECT_EQ(S(x.Lt(0)), F);
  EXPECT_EQ(S(ld * 0), UOp::Int(0));
}

TEST_F(Rules, ConstantsMoveRight) {
  EXPECT_EQ(S(UOp::Int(3) + ld), ld + 3);
  EXPECT_EQ(S(UOp::Int(3) * ld), ld * 3);
}

TEST_F(Rules, AddIdentitiesAndCollectingTerms) {
  EXPECT_EQ(S(ld + 0), ld);
  EXPECT_EQ(S(ld + ld), ld * 2);
  EXPECT_EQ(S(ld * 3 + ld * 4), ld * 7);
  EXPECT_EQ(S(ld - ld), UOp::Int(0));
  EXPECT_EQ(S((ld + 3) + (x + 4)), (ld + x) + 7);
  EXPECT_EQ(S((ld * 3 + x) + ld * 2), ld * 5 + x);
  EXPECT_EQ(S((ld + x) - ld), x);
  EXPECT_EQ(S(ld.FloorDiv(4) * 4 + ld.Mod(4)), ld);
  EXPECT_EQ(S(ld.Mod(4) * 3 + ld.FloorDiv(4) * 12 + x), ld * 3 + x);
  // a chain of three levels (an unravel over shape (.., 4, 4), then the ravel)
  EXPECT_EQ(S(ld.FloorDiv(16) * 16 + ld.FloorDiv(4).Mod(4) * 4 + ld.Mod(4)), ld);
  EXPECT_EQ(S(ld.Mod(4) + ld.FloorDiv(4).Mod(4) * 4 + ld.FloorDiv(16).Mod(4) * 16 + ld.FloorDiv(64) * 64),
            ld);
}

// Long sums: distinct terms are left as they are, repeated ones collected, in any order and
// at any length (the memo of collected sums must not change what comes out).
TEST_F(Rules, LongSumsCollectWhatRepeats) {
  const int n = 3000, m = 300;  // (a repeated term rebuilds the sum: n * m work)
  std::vector<UOp> v;
  for (int k = 0; k < n; ++k) v.push_back(UOp::Var("v" + std::to_string(k), 0, 9));
  auto chain = [&](int count, auto term) {
    UOp s = term(0);
    for (int k = 1; k < count; ++k) s = s + term(k);
    return s;
  };
  UOp distinct = chain(n, [&](int k) { return v[k]; });
  EXPECT_EQ(S(distinct), distinct);
  UOp twice = chain(m, [&](int k) { return v[k]; });
  for (int k = 0; k < m; ++k) twice = twice + v[k];
  EXPECT_EQ(S(twice), chain(m, [&](int k) { return v[k] * 2; }));
  // a term repeated deep in the sum merges where it first stood; constants gather last
  UOp v5 = chain(n, [&](int k) { return k == 5 ? v[k] * 2 : v[k]; });
  EXPECT_EQ(S(distinct + v[5]), v5);
  UOp without17 = v[0];
  for (int k = 1; k < n; ++k)
    if (k != 17) without17 = without17 + v[k];
  EXPECT_EQ(S(distinct + 5 + v[17] * -1 + 3), without17 + 8);
  // one sum under two larger ones, in one graph
  EXPECT_EQ(S(UOp::Sink({distinct + v[5], distinct + x})), UOp::Sink({v5, distinct + x}));
}

TEST_F(Rules, FloatAddIsNotReassociated) {
  UOp e = (f + UOp::Const(DType::kF32, 1.0)) + UOp::Const(DType::kF32, 2.0);
  EXPECT_EQ(S(e), e);
  UOp z = f + UOp::Const(DType::kF32, 0.0);  // -0.0 + 0.0 is +0.0: not an identity
  EXPECT_EQ(S(z), z);
}

TEST_F(Rules, MulIdentitiesAndDistribution) {
  EXPECT_EQ(S(ld * 1), ld);
  EXPECT_EQ(S(f * UOp::Const(DType::kF32, 1.0)), f);
  EXPECT_EQ(S(ld * 2 * 3), ld * 6);
  EXPECT_EQ(S((ld + x) * 2), ld * 2 + x * 2);
  EXPECT_EQ(S((ld + 1) * 4), ld * 4 + 4);
  UOp fz = f * UOp::Const(DType::kF32, 0.0);  // NaN * 0 is NaN: not folded for floats
  EXPECT_EQ(S(fz), fz);
}

TEST_F(Rules, DivMod) {
  EXPECT_EQ(S(ld.FloorDiv(1)), ld);
  EXPECT_EQ(S(ld.Mod(1)), UOp::Int(0));
  UOp z = UOp::Var("z", -1000, 1000);
  EXPECT_EQ(S((z * 8).FloorDiv(8)), z);
  EXPECT_EQ(S((z * 8 + i).FloorDiv(8)), z);  // i < 8
  EXPECT_EQ(S((z * 16 + x).FloorDiv(8)), z * 2 + x.FloorDiv(8));
  // ld * 8 may wrap, and (ld * 8) // 8 is then not ld: left; a remainder by a power of
  // two is the same wrapped or not
  EXPECT_EQ(S((ld * 8).FloorDiv(8)), (ld * 8).FloorDiv(8));
  EXPECT_EQ(S((ld * 8).Mod(8)), UOp::Int(0));
  EXPECT_EQ(S((ld * 8 + i).Mod(8)), i);
  EXPECT_EQ(S((ld * 6 + i).Mod(6)), (ld * 6 + i).Mod(6));  // 2^32 is no multiple of 6
  // the two: x + x and x * 100000 wrap near the top of x's bounds
  UOp w = UOp::Var("w", 0, INT32_MAX);
  EXPECT_EQ(S((w + w).FloorDiv(2)), (w * 2).FloorDiv(2));
  EXPECT_EQ(S((w * 100000).Mod(100000)), (w * 100000).Mod(100000));
  EXPECT_EQ(S((x + 9).FloorDiv(8)), (x + 1).FloorDiv(8) + 1);
  EXPECT_EQ(S(ld.FloorDiv(2).FloorDiv(3)), ld.FloorDiv(6));
  EXPECT_EQ(S(j.FloorDiv(n)), UOp::Int(0));  // x // n -> 0 when 0 <= x < n, symbolic n
  EXPECT_EQ(S(j.Mod(n)), j);
  EXPECT_EQ(S(i.Mod(n + 3)), i);               // bounds: i <= 3 < 4 <= n + 3
  EXPECT_EQ(S(y.FloorDiv(8)), y.FloorDiv(8));  // y may be negative: stays
}

// A divisor that a common factor of the sum's large terms divides, the rest within [0, the
// factor): a head's row (8 * tile + row in tile) // 32 and % 32, as a reshape of (heads,
// head size) reads a tile of 8 rows. Floor division: z may be negative.
TEST_F(Rules, DivModByAMultipleOfACommonFactor) {
  UOp z = UOp::Var("z", -1000, 1000), r = UOp::Range(8, 5);
  EXPECT_EQ(S((z * 8 + r).FloorDiv(32)), z.FloorDiv(4));
  EXPECT_EQ(S((z * 8 + r).Mod(32)), z.Mod(4) * 8 + r);
  EXPECT_EQ(S((z * 24 + r * 3 + 2).FloorDiv(48)), z.FloorDiv(2));  // 3r + 2 < 24
  // the rest reaches the factor: no rewrite
  EXPECT_EQ(S((z * 8 + r + 1).FloorDiv(32)), (z * 8 + r + 1).FloorDiv(32));
  EXPECT_EQ(S((z * 8 + i * 3).Mod(32)), (z * 8 + i * 3).Mod(32));  // i * 3 reaches 9
}

TEST_F(Rules, Comparisons) {
  EXPECT_EQ(S(j.Lt(n)), T);  // relational
  EXPECT_EQ(S(ld.Lt(ld)), F);
  EXPECT_EQ(S(ld.Ne(ld)), F);
  EXPECT_EQ(S(ld.Eq(ld)), T);
  EXPECT_EQ(S((x + 3).Lt(10)), x.Lt(7));
  EXPECT_EQ(S((x * 4).Lt(10)), x.Lt(3));   // x*4 < 10 <=> x < 2.5 <=> x < 3
  EXPECT_EQ(S((y * 4).Lt(-6)), y.Lt(-1));  // y*4 < -6 <=> y < -1.5 <=> y < -1
  UOp fl = f.Lt(f);  // NaN < NaN is false but so is 1 < 1; still, floats are left alone
  EXPECT_EQ(S(fl), fl);
  UOp wrap = (ld + 1).Lt(5);  // ld + 1 may overflow: not moved
  EXPECT_EQ(S(wrap), wrap);
}

TEST_F(Rules, WhereMaxBitwiseCast) {
  EXPECT_EQ(S(T.Where(x, y)), x);
  EXPECT_EQ(S(F.Where(x, y)), y);
  EXPECT_EQ(S(ld.Lt(3).Where(x, x)), x);
  EXPECT_EQ(S(ld.Max(ld)), ld);
  EXPECT_EQ(S(x.Max(y)), UOp::Derived(Ops::MAX, {x, y}));
  EXPECT_EQ(S((x + 10).Max(y)), x + 10);  // x + 10 >= 10 > 5 >= y
  EXPECT_EQ(S(y.Max(x + 10)), x + 10);
  UOp b = ld.Lt(3);
  EXPECT_EQ(S(UOp::Derived(Ops::AND, {b, b})), b);
  EXPECT_EQ(S(UOp::Derived(Ops::XOR, {ld, ld})), UOp::Int(0));
  EXPECT_EQ(S(UOp::Derived(Ops::AND, {b, T})), b);
  EXPECT_EQ(S(UOp::Derived(Ops::AND, {b, F})), F);
  EXPECT_EQ(S(UOp::Derived(Ops::OR, {b, T})), T);
  EXPECT_EQ(S(UOp::Derived(Ops::OR, {b, F})), b);
  EXPECT_EQ(S(UOp::Derived(Ops::OR, {ld, UOp::Int(0)})), ld);
  EXPECT_EQ(S(UOp::Derived(Ops::AND, {ld, UOp::Int(0)})), UOp::Int(0));
  EXPECT_EQ(S(ld.Cast(DType::kI32)), ld);
}

TEST_F(Rules, SmallIdentities) {
  auto D = [](Ops op, UOp a, UOp b) { return UOp::Derived(op, {a, b}); };
  EXPECT_EQ(S(D(Ops::SHL, ld, UOp::Int(0))), ld);
  EXPECT_EQ(S(D(Ops::SHR, ld, UOp::Int(0))), ld);
  EXPECT_EQ(S(D(Ops::XOR, D(Ops::XOR, ld, UOp::Int(5)), UOp::Int(5))), ld);
  EXPECT_EQ(S(ld.Max(UOp::Int(3)).Max(UOp::Int(7))), ld.Max(UOp::Int(7)));
  EXPECT_EQ(S(ld.Max(UOp::Int(7)).Max(UOp::Int(3))), ld.Max(UOp::Int(7)));
  // b // b and b % b when b is never 0; not when it may be
  EXPECT_EQ(S(n.FloorDiv(n)), UOp::Int(1));
  EXPECT_EQ(S(n.Mod(n)), UOp::Int(0));
  EXPECT_EQ(S(x.FloorDiv(x)), x.FloorDiv(x));  // x may be 0
  EXPECT_EQ(S((n * x).Mod(n)), UOp::Int(0));
  EXPECT_EQ(S((x * n).Mod(n)), UOp::Int(0));
  UOp wraps = (n * ld).Mod(n);  // n * ld may wrap: its remainder is not 0 then
  EXPECT_EQ(S(wraps), wraps);
  EXPECT_EQ(S((x * 4).FloorDiv(8)), x.FloorDiv(2));
  EXPECT_EQ(S((x * 4).FloorDiv(12)), x.FloorDiv(3));
  UOp big = (ld * 4).FloorDiv(8);  // ld * 4 may wrap: left
  EXPECT_EQ(S(big), big);
  // a divisor that is not a constant: d*a + b over d, for d > 0 and no wrap
  EXPECT_EQ(S((n * x + i).FloorDiv(n)), x + i.FloorDiv(n));
  EXPECT_EQ(S((x * n + i).Mod(n)), i.Mod(n));
  EXPECT_EQ(S((n * 3 + x).FloorDiv(n)), S(x.FloorDiv(n) + 3));
  EXPECT_EQ(S((y * x + i).FloorDiv(y)), (y * x + i).FloorDiv(y));  // y may be <= 0
  // congruences: coefficients into (-c/2, c/2], the constant into [0, c)
  UOp a = UOp::Var("a", 0, 1);
  EXPECT_EQ(S((a * 13 + 17).Mod(18)), a * -5 + 17);  // 17 - 5a in [12, 17]: the remainder itself
  EXPECT_EQ(S((x * 13 + 40).Mod(18)), (x * -5 + 4).Mod(18));
  EXPECT_EQ(S((x * 5 + 4).Mod(18)), (x * 5 + 4).Mod(18));  // already reduced: left
  // mod of mod
  EXPECT_EQ(S(ld.Mod(12).Mod(4)), ld.Mod(4));
  EXPECT_EQ(S(ld.Mod(12).Mod(5)), ld.Mod(12).Mod(5));  // 5 does not divide 12
}

TEST_F(Rules, ComparisonsThroughDivisionAndNegation) {
  EXPECT_EQ(S(x.FloorDiv(4).Lt(3)), x.Lt(12));
  EXPECT_EQ(S(y.FloorDiv(4).Lt(-1)), y.Lt(-4));  // floor: y // 4 < -1 <=> y < -4
  EXPECT_EQ(S((-x).Lt(-y)), y.Lt(x));
  UOp minus = (-ld).Lt(-x);  // ld may be INT32_MIN, whose negation is itself
  EXPECT_EQ(S(minus), minus);
}

TEST_F(Rules, BooleanContradictionsAndNestedWhere) {
  UOp b = ld.Lt(10), notb = UOp::Derived(Ops::XOR, {b, T});
  EXPECT_EQ(S(UOp::Derived(Ops::AND, {b, notb})), F);
  EXPECT_EQ(S(UOp::Derived(Ops::AND, {notb, b})), F);
  EXPECT_EQ(S(UOp::Derived(Ops::OR, {b, notb})), T);
  EXPECT_EQ(S(b.Where(T, F)), b);
  EXPECT_EQ(S(b.Where(b.Where(x, y), n)), b.Where(x, n));
  EXPECT_EQ(S(b.Where(x, b.Where(y, n))), b.Where(x, n));
}

// valid ? idx : 0: the index simplified knowing the gate holds (padding, image-style reads)
TEST_F(Rules, AValueUnderAGateKnowsTheGateHolds) {
  UOp r = UOp::Range(8, 0), zero = UOp::Int(0);
  EXPECT_EQ(S(r.Lt(4).Where(r.FloorDiv(4) + r.Mod(4), zero)), r.Lt(4).Where(r, zero));
  // 0 < r < 5: r - 1 in [0, 3]
  UOp valid = UOp::Derived(Ops::AND, {UOp::Int(0).Lt(r), r.Lt(5)});
  EXPECT_EQ(S(valid.Where((r + -1).FloorDiv(4), zero)), zero);  // where(valid, 0, 0)
  // a negated gate: !(r < 4) says r >= 4
  UOp not4 = UOp::Derived(Ops::XOR, {r.Lt(4), T});
  EXPECT_EQ(S(not4.Where(r.FloorDiv(4), zero)), not4.Where(UOp::Int(1), zero))
      << ToUir(S(not4.Where(r.FloorDiv(4), zero)));
  // a gate that says nothing new leaves it
  UOp same = r.Lt(8).Where(r.Mod(3), zero);
  EXPECT_EQ(S(same), S(r.Mod(3)));  // (r < 8 is true: where folds)
}

// A load inside the gated value (not the value itself) is read where the gate fails too, so
// its index keeps its clamp; a load that is the value is read only where the gate holds.
TEST_F(Rules, ALoadInsideAGatedValueKeepsItsClampedIndex) {
  UOp r = UOp::Range(72, 0);
  UOp valid = UOp::Derived(Ops::AND, {UOp::Int(23).Lt(r), r.Lt(48)});
  UOp buf = UOp::Buffer(DType::kF32, 0, 24);
  UOp clamped = valid.Where(r + -24, UOp::Int(0));
  UOp read = buf.Index(clamped).Load();
  UOp zero = UOp::Const(DType::kF32, 0.0);
  EXPECT_EQ(S(valid.Where(read, zero)), valid.Where(buf.Index(r + -24).Load(), zero));
  UOp inside = valid.Where(read * 2.0, zero);  // (as a sum's loop reads it, under a PAD)
  EXPECT_EQ(S(inside), inside) << ToUir(S(inside));
}

// Simplify never makes a graph the verifier refuses: a divisor that folds to 0 leaves the
// graph as it was.
TEST_F(Rules, ADivisorThatFoldsToZeroLeavesTheGraphAsItWas) {
  UOp g = x.FloorDiv(UOp::Int(1) + UOp::Int(-1)) + ld * 2;
  EXPECT_EQ(S(g), g);
  UOp m = x.Mod(n - n);
  EXPECT_EQ(S(m), m);
}

TEST_F(Rules, SimplifyIsIdempotent) {
  for (UOp e :
       {(ld * 8 + i).FloorDiv(8), (x + 9).FloorDiv(8), (ld + 3) + (x + 4), (y * 4).Lt(-6)}) {
    UOp once = S(e);
    EXPECT_EQ(S(once), once) << ToUir(e);
  }
}

}  // namespace
}  // namespace uopc
