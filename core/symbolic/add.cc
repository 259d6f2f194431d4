#include "core/symbolic/add.h"

#include <algorithm>

#include "core/symbolic/terms.h"

namespace uopc {
namespace {

// Merges terms with the same base; rebuilds the sum when anything merged or cancelled, or
// when two constants were apart.
UOp CollectTerms(const Match& m) {
  const UOp& n = m["n"];
  Sum sum = FlattenSum(n);
  std::vector<Term> merged;
  bool changed = sum.num_constants > 1;
  for (const Term& t : sum.terms) {
    auto it =
        std::find_if(merged.begin(), merged.end(), [&](const Term& o) { return o.base == t.base; });
    if (it == merged.end()) {
      merged.push_back(t);
      continue;
    }
    it->coeff = WrapTo(n.dtype(), __int128{it->coeff} + t.coeff);
    changed = true;
  }
  // (x // c)*(k*c) + (x % c)*k -> x*k
  for (Term& m : merged) {
    if (!m.base.is(Ops::MOD) || !m.base.src(1).is(Ops::CONST) || m.coeff == 0) continue;
    const UOp &x = m.base.src(0), &c = m.base.src(1);
    for (Term& d : merged) {
      if (!d.base.is(Ops::FLOORDIV) || !(d.base.src(0) == x) || !(d.base.src(1) == c)) continue;
      if (d.coeff != WrapTo(n.dtype(), __int128{m.coeff} * *c.ConstIntValue())) continue;
      m = {x, m.coeff};
      d.coeff = 0;
      changed = true;
      break;
    }
  }
  for (const Term& t : merged) changed |= t.coeff == 0;
  return changed ? BuildSum(merged, sum.constant, n.dtype()) : UOp();
}

}  // namespace

const PatternMatcher& AddRules() {
  static const PatternMatcher* pm = new PatternMatcher({
      // x + 0 -> x
      {(UPat::Var("x") + UPat::Val(0)).Ints(), [](const Match& m) { return m["x"]; }},
      // a*c0 + ... + a*c1 + ... -> a*(c0+c1) + ...
      {UPat::Op({Ops::ADD}, std::nullopt, "n").Ints(), CollectTerms},
  });
  return *pm;
}

}  // namespace uopc
