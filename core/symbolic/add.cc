#include "core/symbolic/add.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

#include "core/symbolic/terms.h"

namespace uopc {

// A sum with nothing to collect: its terms' bases, and whether it holds a constant or a
// MOD (which the recombination rule looks at). Owned by one node at a time.
struct Collected {
  absl::flat_hash_set<const UOp::Node*> bases;
  bool has_constant = false, has_mod = false;
};

struct SumMemo::State {
  absl::flat_hash_map<const UOp::Node*, std::unique_ptr<Collected>> sums;
  std::vector<UOp> keep;  // the nodes keyed: alive, so that no address is reused meanwhile
};

namespace {

thread_local SumMemo::State* memo = nullptr;

bool IsSimpleTerm(const UOp& b, UOp* base) {
  if (b.is(Ops::ADD) || b.ConstIntValue()) return false;
  *base = b.is(Ops::MUL) && b.src(1).is(Ops::CONST) ? b.src(0) : b;
  return !base->is(Ops::MOD) && !base->is(Ops::FLOORDIV);
}

void Remember(const UOp& n, std::unique_ptr<Collected> c) {
  memo->keep.push_back(n);
  memo->sums[n.get()] = std::move(c);
}

// Merges terms with the same base; rebuilds the sum when anything merged or cancelled, or
// when two constants were apart.
UOp CollectTerms(const Match& m) {
  const UOp& n = m["n"];
  if (memo) {  // a + b, where a had nothing to collect and b is one more distinct term
    if (memo->sums.contains(n.get())) return UOp();
    auto a = memo->sums.find(n.src(0).get());
    UOp base;
    if (a != memo->sums.end() && a->second && !a->second->has_constant &&
        IsSimpleTerm(n.src(1), &base) && !a->second->bases.contains(base.get())) {
      std::unique_ptr<Collected> c = std::move(a->second);  // (a's entry: recomputed if asked again)
      memo->sums.erase(a);
      c->bases.insert(base.get());
      memo->keep.push_back(base);
      Remember(n, std::move(c));
      return UOp();
    }
  }
  Sum sum = FlattenSum(n);
  std::vector<Term> merged;
  absl::flat_hash_map<const UOp::Node*, size_t> at;  // base -> its term in `merged`
  at.reserve(sum.terms.size());
  bool changed = sum.num_constants > 1;
  bool divmod = false;
  for (const Term& t : sum.terms) {
    auto [it, fresh] = at.try_emplace(t.base.get(), merged.size());
    divmod |= t.base.is(Ops::MOD);
    if (fresh) {
      merged.push_back(t);
      continue;
    }
    Term& o = merged[it->second];
    o.coeff = WrapTo(n.dtype(), __int128{o.coeff} + t.coeff);
    changed = true;
  }
  // (x // c)*(k*c) + (x % c)*k -> x*k; also where x is y // c1 and the quotient is y // (c1*c)
  // (as (y // c1) // c is written), so that a chain of any depth recombines level by level:
  // (y // 16)*16 + ((y // 4) % 4)*4 + y % 4 -> (y // 4)*4 + y % 4 -> y
  for (Term& m : merged) {
    if (!divmod) break;
    if (!m.base.is(Ops::MOD) || !m.base.src(1).is(Ops::CONST) || m.coeff == 0) continue;
    const UOp &x = m.base.src(0), &c = m.base.src(1);
    auto quotient = [&](const UOp& q) {  // q is x // c
      if (!q.is(Ops::FLOORDIV) || !q.src(1).is(Ops::CONST)) return false;
      if (q.src(0) == x && q.src(1) == c) return true;
      if (!x.is(Ops::FLOORDIV) || !x.src(1).is(Ops::CONST) || !(q.src(0) == x.src(0))) return false;
      const __int128 c1 = *x.src(1).ConstIntValue(), cc = *c.ConstIntValue();
      return c1 > 0 && cc > 0 && c1 * cc == *q.src(1).ConstIntValue();
    };
    for (Term& d : merged) {
      if (!quotient(d.base)) continue;
      if (d.coeff != WrapTo(n.dtype(), __int128{m.coeff} * *c.ConstIntValue())) continue;
      m = {x, m.coeff};
      d.coeff = 0;
      changed = true;
      break;
    }
  }
  for (const Term& t : merged) changed |= t.coeff == 0;
  if (changed) return BuildSum(merged, sum.constant, n.dtype());
  if (memo) {
    auto c = std::make_unique<Collected>();
    c->bases.reserve(merged.size());
    for (const Term& t : merged) c->bases.insert(t.base.get()), memo->keep.push_back(t.base);
    c->has_constant = sum.num_constants > 0;
    c->has_mod = divmod;
    Remember(n, std::move(c));
  }
  return UOp();
}

}  // namespace

SumMemo::SumMemo() : state_(std::make_unique<State>()), outer_(memo) { memo = state_.get(); }
SumMemo::~SumMemo() { memo = outer_; }

const PatternMatcher& AddRules() {
  static const PatternMatcher* pm = new PatternMatcher("add", {
      // x + 0 -> x
      {(UPat::Var("x") + UPat::Val(0)).Ints(), [](const Match& m) { return m["x"]; }},
      // a*c0 + ... + a*c1 + ... -> a*(c0+c1) + ...
      {UPat::Op({Ops::ADD}, std::nullopt, "n").Ints(), CollectTerms},
  });
  return *pm;
}

}  // namespace uopc
