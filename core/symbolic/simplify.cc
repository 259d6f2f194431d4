#include "core/symbolic/simplify.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "core/bounds.h"
#include "core/check.h"
#include "core/graph_rewrite.h"
#include "core/substitute.h"
#include "core/symbolic/add.h"
#include "core/symbolic/compare.h"
#include "core/symbolic/divmod.h"
#include "core/symbolic/fold.h"
#include "core/symbolic/logic.h"
#include "core/symbolic/mul.h"

namespace uopc {
namespace {

// A value under a gate: in where(c, a, b), `a` is only read where c holds, so `a` may be
// simplified knowing it. The gates understood are comparisons of a loop index or VAR with
// a constant (x < k, k < x), their negations and their conjunctions, as padding and image-
// style accesses write them (valid ? idx : 0): each narrows that leaf's bounds inside `a`
// (the leaf becomes a VAR of the narrowed bounds while `a` is simplified again).
using Bounds = absl::flat_hash_map<const UOp::Node*, std::pair<UOp, std::pair<int64_t, int64_t>>>;

bool IsLeaf(const UOp& x) { return x.is(Ops::RANGE) || x.is(Ops::VAR); }

// What `c` holding says of leaves' bounds (narrowing `out`); false if nothing is understood.
bool Learn(const UOp& c, bool holds, Bounds& out) {
  auto narrow = [&](const UOp& x, int64_t lo, int64_t hi) {
    auto [it, fresh] = out.try_emplace(x.get(), x, std::make_pair(VMin(x), VMax(x)));
    it->second.second.first = std::max(it->second.second.first, lo);
    it->second.second.second = std::min(it->second.second.second, hi);
    return true;
  };
  if (c.is(Ops::AND) && holds) {  // a & b holds: both do
    bool a = Learn(c.src(0), true, out), b = Learn(c.src(1), true, out);
    return a || b;
  }
  if (c.is(Ops::XOR) && c.src(1).ConstIntValue() == 1) return Learn(c.src(0), !holds, out);
  if (!c.is(Ops::CMPLT)) return false;
  const UOp &l = c.src(0), &r = c.src(1);
  const DType t = l.dtype();
  if (!HasBounds(t)) return false;
  if (IsLeaf(l) && r.ConstIntValue()) {  // x < k (or x >= k)
    const int64_t k = *r.ConstIntValue();
    if (holds) return k > DTypeMin(t) && narrow(l, DTypeMin(t), k - 1);
    return narrow(l, k, DTypeMax(t));
  }
  if (IsLeaf(r) && l.ConstIntValue()) {  // k < x (or x <= k)
    const int64_t k = *l.ConstIntValue();
    if (holds) return k < DTypeMax(t) && narrow(r, k + 1, DTypeMax(t));
    return narrow(r, DTypeMin(t), k);
  }
  return false;
}

// Whether `a` reads memory other than as itself: a load inside it is read where c fails as
// well (renderers read a load lazily only where it is a WHERE's branch itself), so its index
// must keep the clamp (valid ? idx : 0) that knowing c would remove.
// (`a` may be a load itself, of a buffer or of an accumulator, whose loop reads more).
bool ReadsInside(const UOp& a) {
  for (const UOp& x : a.Toposort())
    if (x.is(Ops::LOAD) && !(x == a)) return true;
  return false;
}

// where(c, a, b) -> where(c, a', b): a simplified knowing c
UOp SimplifyUnderGate(const Match& m) {
  if (ReadsInside(m["a"])) return UOp();
  Bounds learned;
  if (!Learn(m["c"], true, learned)) return UOp();
  // each leaf that c narrows becomes a VAR of its narrowed bounds inside `a`
  absl::flat_hash_map<const UOp::Node*, UOp> to_var, back;
  for (const auto& [node, entry] : learned) {
    const auto& [x, b] = entry;
    if (b.first > b.second) return UOp();  // c never holds: another rule's business
    if (b.first <= VMin(x) && b.second >= VMax(x)) continue;
    UOp v = UOp::Var(absl::StrCat("gate_", reinterpret_cast<uintptr_t>(node)), b.first,
                     b.second);
    to_var[node] = v;
    back[v.get()] = x;
  }
  if (to_var.empty()) return UOp();
  UOp a = ReplaceNodes(Simplify(ReplaceNodes(m["a"], to_var)), back);
  if (a == m["a"]) return UOp();
  return m["c"].Where(a, m["b"]);
}

}  // namespace

const PatternMatcher& SimplifyRules() {
  static const PatternMatcher* pm = new PatternMatcher(
      FoldRules() + AddRules() + MulRules() + DivModRules() + CompareRules() + LogicRules() +
      PatternMatcher("where", {{UPat::Op({Ops::WHERE}, {{UPat::Var("c"), UPat::Var("a"), UPat::Var("b")}}),
                       SimplifyUnderGate}}));
  return *pm;
}

UOp Simplify(const UOp& u) {  // (re-entered by SimplifyUnderGate; the memo nests)
  SumMemo sums;
  absl::StatusOr<UOp> rewritten = GraphRewrite(u, SimplifyRules());
  UOPC_CHECK(rewritten.ok()) << rewritten.status().message();  // (a rule table's bug)
  const UOp out = *std::move(rewritten);
  // a divisor that folds to the constant 0 makes a graph no verifier accepts: the graph
  // divides by zero wherever it runs, and is left as it was (for its user to find)
  for (const UOp& n : out.Toposort())
    if ((n.is(Ops::FLOORDIV) || n.is(Ops::MOD)) && n.src(1).ConstIntValue() == 0) return u;
  return out;
}

}  // namespace uopc
