#include "core/symbolic/logic.h"

#include "core/bounds.h"

namespace uopc {
namespace {

UPat Bin(Ops op, UPat a, UPat b) { return UPat::Op({op}, {{std::move(a), std::move(b)}}); }
UOp X(const Match& m) { return m["x"]; }
UOp Zero(const Match& m) { return UOp::ConstInt(m["x"].dtype(), 0); }
UOp C(const Match& m) { return m["c"]; }

// max(x, y) -> whichever bounds show is the larger
UOp MaxByBounds(const Match& m) {
  const UOp &x = m["x"], &y = m["y"];
  if (!HasBounds(x.dtype())) return UOp();
  if (VMin(x) >= VMax(y)) return x;
  if (VMin(y) >= VMax(x)) return y;
  return UOp();
}

// max(max(x, c0), c1) -> max(x, max(c0, c1))
UOp NestedMaxConst(const Match& m) {
  const UOp &c0 = m["c0"], &c1 = m["c1"];
  return UOp::Make(Ops::MAX, m["x"].dtype(), {m["x"], *c0.ConstIntValue() >= *c1.ConstIntValue() ? c0 : c1});
}

}  // namespace

const PatternMatcher& LogicRules() {
  const UPat x = UPat::Var("x");
  static const PatternMatcher* pm = new PatternMatcher("logic", {
      // where(c, a, b) with a constant c -> a or b
      {UPat::Op({Ops::WHERE}, {{UPat::Cst("c"), UPat::Var("a"), UPat::Var("b")}}),
       [](const Match& m) { return m["c"].ConstIntValue().value_or(1) ? m["a"] : m["b"]; }},
      // where(c, a, a) -> a
      {UPat::Op({Ops::WHERE}, {{UPat::Var("c"), UPat::Var("a"), UPat::Var("a")}}),
       [](const Match& m) { return m["a"]; }},
      // where(c, true, false) -> c
      {UPat::Op({Ops::WHERE}, {{UPat::Var("c"), UPat::Val(1), UPat::Val(0)}}).DTypes({DType::kBool}),
       [](const Match& m) { return m["c"].dtype() == DType::kBool ? m["c"] : UOp(); }},
      // where(c, where(c, a, b), d) -> where(c, a, d): the inner one is only read where c holds
      {UPat::Op({Ops::WHERE}, {{UPat::Var("c"),
                                UPat::Op({Ops::WHERE}, {{UPat::Var("c"), UPat::Var("a"), UPat::Var()}}),
                                UPat::Var("d")}}),
       [](const Match& m) { return m["c"].Where(m["a"], m["d"]); }},
      // where(c, a, where(c, b, d)) -> where(c, a, d): the inner one only where c fails
      {UPat::Op({Ops::WHERE}, {{UPat::Var("c"), UPat::Var("a"),
                                UPat::Op({Ops::WHERE}, {{UPat::Var("c"), UPat::Var(), UPat::Var("d")}})}}),
       [](const Match& m) { return m["c"].Where(m["a"], m["d"]); }},
      // max(max(x, c0), c1) -> max(x, max(c0, c1))
      {Bin(Ops::MAX, Bin(Ops::MAX, x.Ints(), UPat::Cst("c0")), UPat::Cst("c1")), NestedMaxConst},
      // (x ^ c) ^ c -> x
      {Bin(Ops::XOR, Bin(Ops::XOR, x.Ints(true), UPat::Cst("c")), UPat::Cst("c")), X},
      // bool: x & !x -> false, x | !x -> true (!x is x ^ true)
      {Bin(Ops::AND, x.DTypes({DType::kBool}), Bin(Ops::XOR, x, UPat::Val(1))),
       [](const Match&) { return UOp::ConstBool(DType::kBool, false); }},
      {Bin(Ops::OR, x.DTypes({DType::kBool}), Bin(Ops::XOR, x, UPat::Val(1))),
       [](const Match&) { return UOp::ConstBool(DType::kBool, true); }},
      // x << 0 -> x, x >> 0 -> x
      {UPat::Op({Ops::SHL, Ops::SHR}, {{x.Ints(), UPat::Val(0)}}), X},
      // max(x, x) -> x
      {Bin(Ops::MAX, x, x), X},
      // max(x, y) -> x when x >= y
      {Bin(Ops::MAX, x.Ints(true), UPat::Var("y")), MaxByBounds},
      // x & x -> x, x | x -> x
      {UPat::Op({Ops::AND, Ops::OR}, {{x, x}}), X},
      // x ^ x -> 0
      {Bin(Ops::XOR, x.Ints(true), x), Zero},
      // x & 0 -> 0 (bool: x & false -> false)
      {Bin(Ops::AND, x.Ints(true), UPat::Val(0).Named("c")), C},
      // x | 0 -> x, x ^ 0 -> x (bool: x | false -> x)
      {UPat::Op({Ops::OR, Ops::XOR}, {{x.Ints(true), UPat::Val(0)}}), X},
      // bool: x & true -> x
      {Bin(Ops::AND, x.DTypes({DType::kBool}), UPat::Val(1)), X},
      // bool: x | true -> true
      {Bin(Ops::OR, x.DTypes({DType::kBool}), UPat::Val(1).Named("c")), C},
      // cast(x) to its own dtype -> x
      {UPat::Op({Ops::CAST}, {{x}}, "n"),
       [](const Match& m) { return m["n"].dtype() == m["x"].dtype() ? m["x"] : UOp(); }},
      // bitcast(bitcast(x)) back to x's dtype -> x (Tensor::Detach's pair)
      {UPat::Op({Ops::BITCAST}, {{UPat::Op({Ops::BITCAST}, {{x}})}}, "n"),
       [](const Match& m) { return m["n"].dtype() == m["x"].dtype() ? m["x"] : UOp(); }},
  });
  return *pm;
}

}  // namespace uopc
