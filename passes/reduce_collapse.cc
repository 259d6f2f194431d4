#include "passes/reduce_collapse.h"

#include <algorithm>
#include <optional>

#include "core/graph_rewrite.h"
#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "passes/scope.h"

namespace uopc {
namespace {

// Whether `u` is a CONST of value `v`, of any dtype.
bool IsValue(const UOp& u, int64_t v) {
  if (!u.is(Ops::CONST)) return false;
  if (const double* d = u.arg().TryGet<double>()) return *d == static_cast<double>(v);
  return u.ConstIntValue() == v;
}

UOp Zero(DType t) { return IsFloat(t) ? UOp::ConstFloat(t, 0) : UOp::ConstInt(t, 0); }
UOp One(DType t) { return IsFloat(t) ? UOp::ConstFloat(t, 1) : UOp::ConstInt(t, 1); }

// cast(b) of a bool b -> where(b, 1, 0)
UOp CastOfBool(const Match& m) {
  const UOp& n = m["n"];
  if (!IsBool(n.src(0).dtype()) || IsBool(n.dtype())) return UOp();
  return n.src(0).Where(One(n.dtype()), Zero(n.dtype()));
}

// cast(where(c, x, 0)) -> where(c, cast(x), 0)
UOp CastOfWhere(const Match& m) {
  const UOp& n = m["n"];
  if (IsBool(n.dtype())) return UOp();
  const UOp& x = m["x"];
  return m["c"].Where(IsValue(x, 1) ? One(n.dtype()) : x.Cast(n.dtype()), Zero(n.dtype()));
}

// where(c, x, 0) * y -> where(c, x * y, 0) (x * y is y where x is 1)
UOp ProductOfWhere(const Match& m) {
  const UOp& x = m["x"];
  const UOp& y = m["y"];
  return m["c"].Where(IsValue(x, 1) ? y : x * y, Zero(m["n"].dtype()));
}

// Whether the loop r is part of `f`'s statements (an accumulator per step of r): then r
// is not a value that can be replaced by another.
bool InStatements(const UOp& f, const UOp& r) {
  for (const UOp& u : f.Toposort())
    if ((u.is(Ops::AFTER) || u.is(Ops::END)) &&
        std::find(u.src().begin() + 1, u.src().end(), r) != u.src().end())
      return true;
  return false;
}

// v = where(e == r, f, 0) for an e that does not move with r: where(0 <= e < n, f at
// r = e, 0), with e clamped into [0, n) where it is an index (in `at`); else a null UOp.
UOp AtIndex(const UOp& v, const UOp& r, UOp* at = nullptr) {
  if (!v.is(Ops::WHERE) || !IsValue(v.src(2), 0) || !v.src(0).is(Ops::CMPEQ)) return UOp();
  const UOp& c = v.src(0);
  const UOp e = c.src(0) == r ? c.src(1) : c.src(1) == r ? c.src(0) : UOp();
  if (!e || e.dtype() != r.dtype() || Reaches(e, r) || InStatements(v.src(1), r)) return UOp();
  const UOp valid = UOp::Derived(Ops::AND, {UOp::Int(-1).Lt(e), e.Lt(r.src(0))});
  const UOp clamped = Simplify(valid.Where(e, UOp::Int(0)));
  if (at) *at = clamped;
  const UOp f = RewriteNodes(
      v.src(1), [&](const UOp& orig, const UOp& rebuilt) { return orig == r ? clamped : rebuilt; });
  return Simplify(valid.Where(f, Zero(v.dtype())));
}

UOp OneHotForm(const UOp& v) {
  absl::StatusOr<UOp> normal = GraphRewrite(v, OneHotRules());
  return normal.ok() ? *normal : v;
}

// where(c, x, 0)
UPat ZeroElse() { return UPat::Op({Ops::WHERE}, {{UPat::Var("c"), UPat::Var("x"), UPat::Val(0)}}); }

}  // namespace

const PatternMatcher& OneHotRules() {
  static const PatternMatcher* pm = new PatternMatcher(
      "one_hot", {
                     {UPat::Op({Ops::CAST}, std::nullopt, "n"), CastOfBool},
                     {UPat::Op({Ops::CAST}, {{ZeroElse()}}, "n"), CastOfWhere},
                     {UPat::Op({Ops::MUL}, {{ZeroElse(), UPat::Var("y")}}, "n"), ProductOfWhere},
                 });
  return *pm;
}

UOp CollapseReduce(Ops op, const UOp& v, std::vector<UOp>& loops) {
  if (op != Ops::ADD) return v;
  UOp out = OneHotForm(v);
  bool collapsed = false;
  for (auto it = loops.begin(); it != loops.end();) {
    if (UOp c = AtIndex(out, *it)) {
      out = c, collapsed = true;
      it = loops.erase(it);
    } else {
      ++it;
    }
  }
  return collapsed ? out : v;
}

std::optional<ScatterRow> ScatterOf(const UOp& v, const std::vector<UOp>& outputs) {
  const UOp form = OneHotForm(v);
  for (const UOp& k : outputs) {  // (the index may move with the other output loops)
    ScatterRow s{k};
    if ((s.value = AtIndex(form, k, &s.index))) return s;
  }
  return std::nullopt;
}

}  // namespace uopc
