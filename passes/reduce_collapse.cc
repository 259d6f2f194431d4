#include "passes/reduce_collapse.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"

#include "core/bounds.h"
#include "core/graph_rewrite.h"
#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "passes/lowered_steps.h"
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
UOp AtIndex(const UOp& v, const UOp& r, UOp* at = nullptr, UOp* in_range = nullptr,
            UOp* picked = nullptr) {
  if (!v.is(Ops::WHERE) || !IsValue(v.src(2), 0) || !v.src(0).is(Ops::CMPEQ)) return UOp();
  const UOp& c = v.src(0);
  const UOp e = c.src(0) == r ? c.src(1) : c.src(1) == r ? c.src(0) : UOp();
  if (!e || e.dtype() != r.dtype() || Reaches(e, r) || InStatements(v.src(1), r)) return UOp();
  const UOp valid = UOp::Derived(Ops::AND, {UOp::Int(-1).Lt(e), e.Lt(r.src(0))});
  const UOp clamped = Simplify(valid.Where(e, UOp::Int(0)));
  if (at) *at = clamped;
  const UOp f = RewriteNodes(
      v.src(1), [&](const UOp& orig, const UOp& rebuilt) { return orig == r ? clamped : rebuilt; });
  if (in_range) *in_range = valid;
  if (picked) *picked = f;
  return Simplify(valid.Where(f, Zero(v.dtype())));
}

UOp OneHotForm(const UOp& v) {
  absl::StatusOr<UOp> normal = GraphRewrite(v, OneHotRules());
  return normal.ok() ? *normal : v;
}

// where(c, x, 0)
UPat ZeroElse() { return UPat::Op({Ops::WHERE}, {{UPat::Var("c"), UPat::Var("x"), UPat::Val(0)}}); }

// REDUCE(op, v, loops...) -> the reduction of v (simplified) over the loops that do not
// collapse; v itself where none is left
UOp CollapseLoops(const Match& m) {
  const UOp& r = m["r"];
  std::vector<UOp> loops(r.src().begin() + 1, r.src().end());
  const UOp v = CollapseReduce(r.arg().Get<ReduceArg>().op, Simplify(r.src(0)), loops);
  if (loops.size() + 1 == r.src().size()) return UOp();  // (none collapsed)
  if (loops.empty()) return v;
  loops.insert(loops.begin(), v);
  return r.WithSrc(loops);
}

bool IsSum(const UOp& v) { return v.is(Ops::REDUCE) && v.arg().Get<ReduceArg>().op == Ops::ADD; }

// Whether `hits` counts the rows that `sum` (a sum into rows) lands in: the same one-hot
// summed over loops of the same lengths, giving the same row and index.
bool CountsRowsOf(const UOp& hits, const UOp& sum, const ScatterRow& row,
                  const std::vector<UOp>& outputs) {
  if (!IsSum(hits) || hits.src().size() != sum.src().size()) return false;
  absl::flat_hash_map<UOp, UOp> same;  // hits' loops -> sum's
  for (size_t i = 1; i < hits.src().size(); ++i) {
    if (!(hits.src(i).src(0) == sum.src(i).src(0))) return false;
    same[hits.src(i)] = sum.src(i);
  }
  const UOp v = RewriteNodes(hits.src(0), [&](const UOp& o, const UOp& b) {
    auto it = same.find(o);
    return it == same.end() ? b : it->second;
  });
  const std::optional<ScatterRow> counted = ScatterOf(Simplify(v), outputs);
  return counted && counted->loop == row.loop && Simplify(counted->index) == Simplify(row.index);
}

// The scatter form of `kernel` (a SINK of loop IR whose stored value is a sum, or base + a
// sum, into rows picked by an index, or those rows set over a base), or a null UOp where
// it is no such kernel.
UOp ScatterKernel(const UOp& kernel) {
  const TopLoops top = TopLoopsOf(kernel);
  if (!top.statement.is(Ops::STORE) || top.loops.empty()) return UOp();
  const UOp& store = top.statement;
  UOp sum = store.src(1), base, hits;
  const UOp& v = store.src(1);
  if (v.is(Ops::WHERE) && v.src(0).is(Ops::CMPLT) && IsValue(v.src(0).src(0), 0) &&
      IsSum(v.src(1))) {  // where(0 < hits, sum, base): a set
    hits = v.src(0).src(1), sum = v.src(1), base = v.src(2);
  } else if (!IsSum(sum) && sum.is(Ops::ADD)) {
    for (int i : {1, 0})
      if (IsSum(sum.src(i))) {
        base = sum.src(1 - i), sum = sum.src(i);
        break;
      }
  }
  if (!IsSum(sum)) return UOp();
  const std::optional<ScatterRow> row = ScatterOf(Simplify(sum.src(0)), top.loops);
  if (!row || (hits && !CountsRowsOf(hits, sum, *row, top.loops))) return UOp();
  // zeros (or the base); then, in the reduction's order (its loops outermost, which no
  // thread splits: two steps may add into one row), each value into its row. A base that
  // is the output itself (an in-place index_add_) is there already: only the adds run.
  const UOp &out = store.src(0).src(0), &at = store.src(0).src(1);
  UOp written = out;
  if (!(base && base.is(Ops::LOAD) && base.src(0) == store.src(0))) {
    std::vector<UOp> zeros{
        out.Index(at).Store(base ? base : UOp::ConstInt(store.src(1).dtype(), 0))};
    zeros.insert(zeros.end(), top.loops.begin(), top.loops.end());
    written = UOp::Derived(Ops::AFTER, {out, UOp::Derived(Ops::END, zeros)});
  }
  int next = NextLoopNumber(kernel);
  absl::flat_hash_map<UOp, UOp> again;  // the other output loops, once more (a loop has one END)
  std::vector<UOp> adds{UOp()};
  adds.insert(adds.end(), sum.src().begin() + 1, sum.src().end());
  for (const UOp& o : top.loops)
    if (!(o == row->loop)) adds.push_back(again[o] = UOp::Range(o.src(0), next++));
  auto renamed = [&](const UOp& u) {
    return RewriteNodes(u, [&](const UOp& o, const UOp& b) {
      auto it = again.find(o);
      return it == again.end() ? b : it->second;
    });
  };
  const UOp index = renamed(row->index);  // (it may move with the other output loops)
  auto scattered = [&](const UOp& u) {
    return renamed(RewriteNodes(u, [&](const UOp& o, const UOp& b) {
      return o == row->loop ? index : b;
    }));
  };
  const UOp into = written.Index(Simplify(scattered(at)));
  adds[0] = hits ? into.Store(Simplify(scattered(row->valid).Where(scattered(row->picked),
                                                                    into.Load())))
                 : into.Store(into.Load() + scattered(row->value));
  return UOp::Sink({UOp::Derived(Ops::END, adds)});
}

const PatternMatcher kCollapseRules("reduce_collapse",
                                    {{UPat::Op({Ops::REDUCE}, std::nullopt, "r"), CollapseLoops}});

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
  if (op == Ops::MAX || op == Ops::AND || op == Ops::OR) {  // (idempotent: f(x, x) == x)
    std::erase_if(loops, [&](const UOp& r) { return VMin(r.src(0)) >= 1 && !Reaches(v, r); });
    return v;
  }
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
    if ((s.value = AtIndex(form, k, &s.index, &s.valid, &s.picked))) return s;
  }
  return std::nullopt;
}

absl::StatusOr<UOp> ReduceCollapse(const UOp& lowered, const PassContext& ctx) {
  return MapKernels(lowered, "reduce_collapse", [&](const UOp& k) -> absl::StatusOr<UOp> {
    if (ctx.TargetOf(KernelDevice(k)).IsCpu())
      if (UOp scatter = ScatterKernel(k)) return scatter;
    return GraphRewrite(k, kCollapseRules);
  });
}

}  // namespace uopc
