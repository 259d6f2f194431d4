#include "passes/schedule_opts.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "core/shape.h"
#include "core/status_macros.h"
#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "passes/lowered_steps.h"
#include "passes/number_loops.h"
#include "passes/opts.h"
#include "passes/reduce_to_accumulators.h"
#include "passes/scope.h"

namespace uopc {
namespace {

// The outermost REDUCEs of `statement` (not those inside another's value), last source first.
std::vector<UOp> Reductions(const UOp& statement) {
  std::vector<UOp> todo{statement}, found;
  absl::flat_hash_set<const UOp::Node*> seen;
  while (!todo.empty()) {
    UOp u = todo.back();
    todo.pop_back();
    if (!seen.insert(u.get()).second) continue;
    if (u.is(Ops::REDUCE)) {
      found.push_back(u);
      continue;
    }
    for (const UOp& s : u.src()) todo.push_back(s);
  }
  return found;
}

bool IsZero(const UOp& u) {
  if (!u.is(Ops::CONST)) return false;
  if (const double* d = u.arg().TryGet<double>()) return *d == 0;
  return u.ConstIntValue() == 0;
}

// The load `x` reads from a buffer, through float casts to or from a half (a half read as
// f32, an f32 rounded to a half as it is read) and a PAD's mask where(valid, x, 0); null if
// it is not a read.
UOp ReadLoad(UOp x) {
  while (true) {
    if (x.is(Ops::CAST) && (IsHalf(x.src(0).dtype()) || IsHalf(x.dtype())) &&
        IsFloat(x.src(0).dtype()) && IsFloat(x.dtype()))
      x = x.src(0);
    else if (x.is(Ops::WHERE) && IsZero(x.src(2)))
      x = x.src(1);
    else
      break;
  }
  if (!x.is(Ops::LOAD)) return UOp();
  UOp b = x.src(0).src(0);
  while (b.is(Ops::AFTER)) b = b.src(0);
  return b.is(Ops::BUFFER) ? x : UOp();
}

// Whether `x` is a read (ReadLoad) that may take consecutive elements (or one) as `loop`
// steps: false when it steps by another constant. A register tile's columns are one vector load each only
// then; read across rows (a matmul by a transposed matrix, as attention's q @ k^T in
// bf16), they are a gather per step, and the sums go faster as rows (the group form). An
// index that divides the loop (a merged loop) steps by 1 but at the splits: not refused.
bool ReadsAlong(const UOp& x, const UOp& loop) {
  const UOp load = ReadLoad(x);
  if (!load) return false;
  const std::optional<int64_t> step = StepAlong(Simplify(load.src(0).src(1)), loop);
  return !step || *step == 0 || *step == 1;
}

// Whether a read in `sum`'s value steps by 1 along its last loop and by a constant other
// than 0 or 1 along `row` (the last output loop): it sums a row that lies in memory.
bool SumsRows(const UOp& sum, const UOp& row) {
  const UOp& along = sum.src(sum.src().size() - 1);
  for (const UOp& u : sum.src(0).Toposort())
    if (const UOp load = ReadLoad(u)) {
      const UOp index = Simplify(load.src(0).src(1));
      const std::optional<int64_t> by = StepAlong(index, row);
      if (StepAlong(index, along) == 1 && by && *by != 0 && *by != 1) return true;
    }
  return false;
}

// `r` (a loop-level REDUCE) with the loops that `unrolls` name (by their place among its
// loops) in steps: each loop r of n steps that AMOUNT divides -> ro (n / AMOUNT) and ri.
UOp Unrolled(const UOp& r, const std::vector<Opt>& unrolls, int& next) {
  std::vector<UOp> src{UOp()};
  absl::flat_hash_map<UOp, UOp> at;
  for (size_t i = 1; i < r.src().size(); ++i) {
    const UOp& loop = r.src(i);
    const auto unroll = std::find_if(unrolls.begin(), unrolls.end(),
                                     [&](const Opt& o) { return o.axis == int(i) - 1; });
    const int64_t n = loop.src(0).ConstIntValue().value_or(0);
    if (unroll == unrolls.end() || n == 0 || n % unroll->amount != 0) {
      src.push_back(loop);
      continue;
    }
    // in steps of `step`: the same iterations in the same order
    const int64_t step = unroll->amount;
    UOp ri = UOp::Range(step, next++, RangeKind::kReduce), x = ri;
    if (n > step) {
      UOp ro = UOp::Range(n / step, next++, RangeKind::kReduce);
      src.push_back(ro);
      x = ro * step + ri;
    }
    src.push_back(ri);
    at[loop] = x;
  }
  if (at.empty()) return r;
  src[0] = RewriteNodes(r.src(0), [&](const UOp& orig, const UOp& rebuilt) {
    auto it = at.find(orig);
    return it == at.end() ? rebuilt : it->second;
  });
  return r.WithSrc(src);
}

}  // namespace

KernelLoops KernelLoopsOf(const UOp& kernel) {
  KernelLoops k;
  const TopLoops top = TopLoopsOf(kernel);
  Shape shape;
  for (const UOp& r : top.loops) {
    k.outputs.push_back(r.src(0).ConstIntValue());
    shape.push_back(Dim::FromUOp(r.src(0)));
  }
  const std::vector<UOp> sums = Reductions(top.statement);
  k.reduces = !sums.empty();
  if (k.reduces)
    for (size_t i = 1; i < sums[0].src().size(); ++i)
      k.reduction.push_back(sums[0].src(i).src(0).ConstIntValue());
  k.matmul =
      k.reduces && !top.loops.empty() && std::all_of(sums.begin(), sums.end(), [&](const UOp& r) {
        const UOp& v = r.src(0);
        return r.arg().Get<ReduceArg>().op == Ops::ADD && v.is(Ops::MUL) &&
               ReadsAlong(v.src(0), top.loops.back()) && ReadsAlong(v.src(1), top.loops.back());
      });
  k.sums_rows = k.reduces && !k.matmul && !top.loops.empty() && sums[0].src().size() > 1 &&
                SumsRows(sums[0], top.loops.back());
  k.shape = ShapeToString(shape);
  return k;
}

absl::StatusOr<UOp> ApplyOpts(const UOp& kernel, const KernelLoops& k,
                              const std::vector<Opt>& opts, const Target& t) {
  ASSIGN_OR_RETURN(const LoopSplits splits, SplitsOf(k, opts, t));
  TopLoops top = TopLoopsOf(kernel);
  std::vector<UOp>& loops = top.loops;
  const std::vector<std::optional<int64_t>>& lengths = k.outputs;
  const int last = static_cast<int>(lengths.size()) - 1;
  int next = NextLoopNumber(kernel);
  absl::flat_hash_map<UOp, UOp> at;  // an output loop -> its index in the split loops
  if (splits.registers) {
    // blocks of the tile's columns outermost (a block of b stays in cache while every row
    // reads it), then tiles of rows, then the tile's rows and columns
    const int64_t c = splits.columns, r = splits.rows;
    auto loop = [&](int64_t size, RangeKind kind) {  // (a loop of one block is no loop)
      return size == 1 ? UOp::Int(0) : UOp::Range(size, next++, kind);
    };
    UOp ro, ri;
    if (r) ro = loop(*lengths[last - 1] / r, RangeKind::kLoop), ri = loop(r, RangeKind::kUpcast);
    UOp co = loop(*lengths[last] / c, RangeKind::kLoop), ci = loop(c, RangeKind::kUpcast);
    if (r) at[loops[last - 1]] = ro * r + ri;
    at[loops[last]] = co * c + ci;
    std::vector<UOp> tile{co};
    if (!r && last >= 1) tile.push_back(loops[last - 1]);  // (untiled rows inside the blocks)
    if (r) tile.insert(tile.end(), {ro, ri});
    tile.push_back(ci);
    loops.resize(std::max(last - 1, 0));
    for (const UOp& l : tile)
      if (l.is(Ops::RANGE)) loops.push_back(l);
  } else if (splits.columns) {
    // a group of columns: their sums at once, in a row on the stack (when the row is not
    // the whole loop, the loop over groups comes outside the row tiles below)
    UOp columns;
    if (const int64_t n = *lengths[last], c = splits.columns; c < n) {
      UOp co = UOp::Range(n / c, next++), ci = UOp::Range(c, next++, RangeKind::kGroup);
      at[loops.back()] = co * c + ci;
      loops.back() = co;
      loops.push_back(ci);
      columns = co;
    } else {
      UOp ci = UOp::Range(loops.back().src(0), next++, RangeKind::kGroup);
      at[loops.back()] = ci;
      loops.back() = ci;
    }
    // a group of rows: the reductions hold a tile of rows of sums
    if (splits.rows) {
      UOp& rows = loops[loops.size() - (columns ? 3 : 2)];
      const int64_t m = *lengths[last - 1], r = splits.rows;
      UOp lo = r < m ? UOp::Range(m / r, next++) : UOp();
      UOp li = UOp::Range(r, next++, RangeKind::kGroup);
      if (lo) {
        at[rows] = lo * r + li;
        rows = lo;
      } else {
        at[rows] = li;
        loops.erase(loops.begin() + (&rows - loops.data()));
      }
      loops.insert(loops.end() - 1, li);  // inside the column groups: their sums are per group
    }
  }
  UOp body = RewriteNodes(top.statement, [&](const UOp& orig, const UOp& rebuilt) {
    if (auto it = at.find(orig); it != at.end()) return it->second;
    return orig.is(Ops::REDUCE) && !splits.unrolls.empty() ? Unrolled(rebuilt, splits.unrolls, next)
                                                           : rebuilt;
  });
  if (loops.empty()) return UOp::Sink({body});
  loops.insert(loops.begin(), body);
  return UOp::Sink({UOp::Derived(Ops::END, loops)});
}

absl::StatusOr<UOp> ScheduleOpts(const UOp& lowered, const PassContext& ctx) {
  return MapKernels(lowered, "schedule_opts", [&](const UOp& kernel) -> absl::StatusOr<UOp> {
    const KernelLoops loops = KernelLoopsOf(kernel);
    if (!loops.reduces) return kernel;
    const Target& t = ctx.TargetOf(KernelDevice(kernel));
    if (std::vector<Opt> actions = OptActions(loops, t); ctx.choose_opts && !actions.empty()) {
      const OptSpace space{
          DefaultOpts(loops, t), std::move(actions),
          [&](const std::vector<Opt>& o) -> absl::StatusOr<UOp> {
            ASSIGN_OR_RETURN(UOp k, ApplyOpts(kernel, loops, o, t));
            return NumberKernelLoops(AccumulateKernel(k, t));
          },
          absl::StrCat(loops.shape, loops.matmul ? ", a matmul" : ", reducing")};
      if (absl::StatusOr<UOp> chosen = ApplyOpts(kernel, loops, ctx.choose_opts(space), t);
          chosen.ok())
        return *chosen;  // (else the defaults)
    }
    return ApplyOpts(kernel, loops, DefaultOpts(loops, t), t);
  });
}

}  // namespace uopc
