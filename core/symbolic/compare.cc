#include "core/symbolic/compare.h"

#include "core/bounds.h"

namespace uopc {
namespace {

using i128 = __int128;

UPat Lt(UPat a, UPat b) { return UPat::Op({Ops::CMPLT}, {{std::move(a), std::move(b)}}); }

bool Fits(i128 v, DType t) { return v >= DTypeMin(t) && v <= DTypeMax(t); }

// x + c0 < c1 -> x < c1 - c0
UOp MoveAddedConst(const Match& m) {
  const UOp& x = m["x"];
  i128 c0 = *m["c0"].ConstIntValue(), c1 = *m["c1"].ConstIntValue();
  DType t = x.dtype();
  if (!HasBounds(t) || !Fits(i128{VMin(x)} + c0, t) || !Fits(i128{VMax(x)} + c0, t) ||
      !Fits(c1 - c0, t))
    return UOp();
  return x.Lt(UOp::ConstInt(t, static_cast<int64_t>(c1 - c0)));
}

// x * c0 < c1 -> x < ceil(c1 / c0), for c0 > 0
UOp DivideConst(const Match& m) {
  const UOp& x = m["x"];
  i128 c0 = *m["c0"].ConstIntValue(), c1 = *m["c1"].ConstIntValue();
  DType t = x.dtype();
  if (c0 <= 0 || !HasBounds(t) || !Fits(i128{VMin(x)} * c0, t) || !Fits(i128{VMax(x)} * c0, t))
    return UOp();
  i128 q = c1 / c0;
  if (q * c0 < c1) ++q;  // ceil, for either sign of c1
  return x.Lt(UOp::ConstInt(t, static_cast<int64_t>(q)));
}

// x // c0 < c1 -> x < c1 * c0, for c0 > 0 (floor division: x // c0 < c1 <=> x < c1 * c0)
UOp ThroughDivision(const Match& m) {
  const UOp& x = m["x"];
  i128 c0 = *m["c0"].ConstIntValue(), c1 = *m["c1"].ConstIntValue();
  DType t = x.dtype();
  if (c0 <= 0 || !HasBounds(t) || !Fits(c1 * c0, t)) return UOp();
  return x.Lt(UOp::ConstInt(t, static_cast<int64_t>(c1 * c0)));
}

// -a < -b -> b < a, when neither is the dtype's minimum (whose negation wraps to itself)
UOp ThroughNegation(const Match& m) {
  const UOp &a = m["a"], &b = m["b"];
  DType t = a.dtype();
  if (!HasBounds(t) || VMin(a) == DTypeMin(t) || VMin(b) == DTypeMin(t)) return UOp();
  return b.Lt(a);
}

}  // namespace

const PatternMatcher& CompareRules() {
  static const PatternMatcher* pm = new PatternMatcher("compare", {
      // RANGE r < r.src[0] -> true
      {Lt(UPat::Op({Ops::RANGE}, std::nullopt, "r"), UPat::Var("e")),
       [](const Match& m) {
         return m["r"].src(0) == m["e"] ? UOp::ConstBool(DType::kBool, true) : UOp();
       }},
      // x < x -> false
      {Lt(UPat::Var("x").Ints(true), UPat::Var("x")),
       [](const Match&) { return UOp::ConstBool(DType::kBool, false); }},
      // x != x -> false
      {UPat::Op({Ops::CMPNE}, {{UPat::Var("x").Ints(true), UPat::Var("x")}}),
       [](const Match&) { return UOp::ConstBool(DType::kBool, false); }},
      // x == x -> true
      {UPat::Op({Ops::CMPEQ}, {{UPat::Var("x").Ints(true), UPat::Var("x")}}),
       [](const Match&) { return UOp::ConstBool(DType::kBool, true); }},
      // x + c0 < c1 -> x < c1 - c0
      {Lt(UPat::Var("x").Ints() + UPat::Cst("c0"), UPat::Cst("c1")), MoveAddedConst},
      // x // c0 < c1 -> x < c1 * c0
      {Lt(UPat::Op({Ops::FLOORDIV}, {{UPat::Var("x").Ints(), UPat::Cst("c0")}}), UPat::Cst("c1")),
       ThroughDivision},
      // -a < -b -> b < a
      {Lt(UPat::Var("a").Ints() * UPat::Val(-1), UPat::Var("b") * UPat::Val(-1)), ThroughNegation},
      // x * c0 < c1 -> x < ceil(c1 / c0)
      {Lt(UPat::Var("x").Ints() * UPat::Cst("c0"), UPat::Cst("c1")), DivideConst},
  });
  return *pm;
}

}  // namespace uopc
