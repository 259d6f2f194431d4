#include "core/symbolic/mul.h"

#include "core/symbolic/terms.h"

namespace uopc {
namespace {

UOp Times(const UOp& x, __int128 c) { return x * UOp::ConstInt(x.dtype(), WrapTo(x.dtype(), c)); }

}  // namespace

const PatternMatcher& MulRules() {
  static const PatternMatcher* pm = new PatternMatcher("mul", {
      // x * 1 -> x
      {UPat::Var("x") * UPat::Val(1), [](const Match& m) { return m["x"]; }},
      // x * 0 -> 0
      {(UPat::Var("x") * UPat::Val(0)).Ints(),
       [](const Match& m) { return UOp::ConstInt(m["x"].dtype(), 0); }},
      // (x * c0) * c1 -> x * (c0 * c1)
      {(UPat::Var("x") * UPat::Cst("c0") * UPat::Cst("c1")).Ints(),
       [](const Match& m) {
         return Times(m["x"], __int128{*m["c0"].ConstIntValue()} * *m["c1"].ConstIntValue());
       }},
      // (x + y) * c -> x*c + y*c
      {((UPat::Var("x") + UPat::Var("y")) * UPat::Cst("c")).Ints(),
       [](const Match& m) { return m["x"] * m["c"] + m["y"] * m["c"]; }},
  });
  return *pm;
}

}  // namespace uopc
