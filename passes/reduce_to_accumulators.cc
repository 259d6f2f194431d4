#include "passes/reduce_to_accumulators.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "passes/lowered_steps.h"
#include "passes/scope.h"

namespace uopc {
namespace {

// Accumulators per block when the row's values are read with a stride (see Across).
constexpr int64_t kAcrossBlock = 16;
// On a target with this many vector registers or fewer (AVX2's 16), a register tile's rows
// are written out (an unroll range, which the C renderer emits once per row): left a loop,
// gcc 12 keeps one of a 4 x 16 tile's sums in memory, stored and loaded again every step
// of k (a 1024 matmul at 20 GFLOP/s on an AMD EPYC with AVX2, 32 with the rows written
// out, OpenBLAS 34). With AVX-512's 32 the loop form measured well (8 x 48 tiles).
constexpr int kUnrolledRowsRegisters = 16;

bool InTile(const UOp& r) {
  const RangeKind k = r.arg().Get<RangeArg>().kind;
  return k == RangeKind::kUpcast || k == RangeKind::kGroup;
}

// Whether every load in `v` that moves with loop `r` moves by a constant number of elements
// per step: computing across `r` then reads rows (stride 1: a matmul by a row-major matrix,
// which vectorizes) or columns (a matmul by a transpose, as a backward pass builds it:
// several independent sums instead of one chain, each row of the matrix read once per
// step of the reduction); a load that jumps (a gather) keeps the reduction's loop inner.
// Returns whether some load moves by more than one (a stride), or nullopt if not even.
std::optional<bool> MovesEvenlyAlong(const UOp& v, const UOp& r) {
  bool strided = false;
  for (const UOp& x : v.Toposort()) {
    if (!x.is(Ops::INDEX)) continue;
    const std::optional<int64_t> step = StepAlong(x.src(1), r);
    if (!step) return std::nullopt;
    if (*step == 0) continue;  // does not move with r
    strided |= *step != 1;
  }
  return strided;
}

bool HasAlloc(const UOp& u) {
  for (const UOp& x : u.Toposort())
    if (x.is(Ops::ALLOC)) return true;
  return false;
}

UOp Identity(Ops op, DType t) {
  if (op == Ops::ADD) return UOp::ConstInt(t, 0);
  if (op == Ops::MUL) return UOp::ConstInt(t, 1);
  if (IsFloat(t)) return UOp::ConstFloat(t, -std::numeric_limits<double>::infinity());
  return IsBool(t) ? UOp::ConstBool(t, false) : UOp::ConstInt(t, DTypeMin(t));
}

// old op v; a sum of products on a target with fused multiply-add: MULACC(a, b, old), one
// rounding a step (f32 and f64 sums: a half's sum is rounded as it is)
UOp Update(Ops op, const UOp& old, const UOp& v, bool fma) {
  if (fma && op == Ops::ADD && v.is(Ops::MUL) &&
      (v.dtype() == DType::kF32 || v.dtype() == DType::kF64))
    return UOp::Derived(Ops::MULACC, {v.src(0), v.src(1), old});
  return op == Ops::MAX ? old.Max(v) : UOp::Derived(op, {old, v});
}

class Accumulator {
 public:
  Accumulator(const UOp& kernel, const Target& t)
      : fma_(t.FusesMultiplyAdd()),
        unroll_rows_(t.registers <= kUnrolledRowsRegisters),
        next_range_(NextLoopNumber(kernel)) {
    for (const UOp& u : kernel.Toposort())
      if (u.is(Ops::ALLOC)) next_alloc_ = std::max(next_alloc_, u.arg().Get<ParamArg>().slot + 1);
    // the tile schedule_opts made: its columns the innermost output loop, its rows another
    const std::vector<UOp> loops = TopLoopsOf(kernel).loops;
    if (!loops.empty() && InTile(loops.back())) {
      inner_ = loops.back();
      registers_ = inner_.arg().Get<RangeArg>().kind == RangeKind::kUpcast;
      for (size_t i = 0; i + 1 < loops.size(); ++i)
        if (InTile(loops[i])) row_ = loops[i];
    }
  }

  /// A REDUCE (its value's REDUCEs made accumulators already) made an accumulator.
  UOp Reduce(const UOp& r);

 private:
  UOp Across(Ops op, DType t, const UOp& v, const std::vector<UOp>& loops,
             const std::vector<UOp>& outer, bool strided, bool rows);
  UOp ColumnsOnce(const UOp& vj, const UOp& ji, const UOp& ri, const std::vector<UOp>& outer);

  UOp inner_;  // the tile's columns, when reductions may be computed across them
  UOp row_;    // the tile's rows (outside inner_), if any
  bool registers_ = false;  // a register tile's: rows outside columns
  bool fma_;                // the target multiplies and adds in one instruction
  bool unroll_rows_;        // a register tile's rows written out (see kUnrolledRowsRegisters)
  int next_range_, next_alloc_ = 0;
};

// acc = identity; for r in the reduction's loops: acc = acc op v; then acc
UOp Accumulator::Reduce(const UOp& r) {
  const Ops op = r.arg().Get<ReduceArg>().op;
  const std::vector<UOp> loops(r.src().begin() + 1, r.src().end());
  const UOp v = Simplify(r.src(0));  // so that the accumulator does not depend on loops it does not use
  std::vector<UOp> outer;
  for (const UOp& l : OpenRanges(v))
    if (std::find(loops.begin(), loops.end(), l) == loops.end()) outer.push_back(l);
  std::optional<bool> strided;
  const bool across = inner_ && std::find(outer.begin(), outer.end(), inner_) != outer.end() &&
                      !HasAlloc(v);
  if (across) {
    strided = MovesEvenlyAlong(v, inner_);
    // rows picked by an index along a short tile (a paged attention's keys, a group of
    // positions): its few sums side by side still beat one chain of adds after another
    if (!strided && *inner_.src(0).ConstIntValue() <= kAcrossBlock) strided = true;
  }
  if (across && strided) {
    const bool rows = row_ && std::find(outer.begin(), outer.end(), row_) != outer.end() &&
                      MovesEvenlyAlong(v, row_);
    return Across(op, r.dtype(), v, loops, outer, *strided, rows);
  }
  UOp acc = UOp::Alloc(r.dtype(), next_alloc_++, 1);
  if (!outer.empty())
    acc = UOp::Derived(Ops::AFTER, [&] {
      std::vector<UOp> s{acc};
      s.insert(s.end(), outer.begin(), outer.end());
      return s;
    }());
  UOp init = acc.Index(0).Store(Identity(op, r.dtype()));
  std::vector<UOp> deps{acc, init};
  deps.insert(deps.end(), loops.begin(), loops.end());
  UOp accj = UOp::Derived(Ops::AFTER, deps);
  std::vector<UOp> end{accj.Index(0).Store(Update(op, accj.Index(0).Load(), v, fma_))};
  end.insert(end.end(), loops.begin(), loops.end());
  return acc.After({UOp::Derived(Ops::END, end)}).Index(0).Load();
}

// In a register tile, a product whose column operand is computed from what it reads (a
// weight rounded to a half as it is read: autocast's) has that operand computed once a
// step, for every column of the tile, into a row of values that each row of the tile then
// reads: per row of the tile it would be computed again (gcc does not move it out of the
// row loop; a bf16 matmul's tile ran 3.5x slower for it).
UOp Accumulator::ColumnsOnce(const UOp& vj, const UOp& ji, const UOp& ri,
                              const std::vector<UOp>& outer) {
  if (!vj.is(Ops::MUL)) return vj;
  for (int c : {0, 1}) {
    const UOp& col = vj.src(c);
    if (col.is(Ops::LOAD) || Reaches(col, ri) || !Reaches(col, ji)) continue;
    const UOp jf = UOp::Range(ji.src(0), next_range_++);
    std::vector<UOp> deps{UOp::Alloc(col.dtype(), next_alloc_++, *ji.src(0).ConstIntValue())};
    deps.insert(deps.end(), outer.begin(), outer.end());  // (one row for each of these loops)
    const UOp row = deps.size() == 1 ? deps[0] : UOp::Derived(Ops::AFTER, deps);
    const UOp fill = row.Index(jf).Store(RewriteNodes(col, [&](const UOp& o, const UOp& r) {
                                           return o == ji ? jf : r;
                                         })).End({jf});
    std::vector<UOp> src(vj.src().begin(), vj.src().end());
    src[c] = row.After({fill}).Index(ji).Load();
    return vj.WithSrc(src);
  }
  return vj;
}

// for j: acc[j] = identity; for (reduction loops) for j: acc[j] = acc[j] op v(j); then acc[inner]
UOp Accumulator::Across(Ops op, DType t, const UOp& v, const std::vector<UOp>& loops,
                        const std::vector<UOp>& outer, bool strided, bool rows) {
  int64_t n = *inner_.src(0).ConstIntValue();
  const int64_t tile = rows ? *row_.src(0).ConstIntValue() : 1;
  std::vector<UOp> deps{UOp::Alloc(t, next_alloc_++, n * tile)};
  for (const UOp& r : outer)
    if (!(r == inner_) && !(rows && r == row_)) deps.push_back(r);
  UOp acc = deps.size() == 1 ? deps[0] : UOp::Derived(Ops::AFTER, deps);
  UOp j1 = UOp::Range(n * tile, next_range_++);
  UOp init = acc.Index(j1).Store(Identity(op, t)).End({j1});
  // Reading columns (a stride along j), the row is done in blocks of kAcrossBlock
  // accumulators, each block's columns read for the whole reduction while they are in
  // cache; with a tile of rows, each value read for a column serves every row of the tile.
  // Every sum still runs in the reduction's order.
  const bool blocked = strided && n % kAcrossBlock == 0 && n != kAcrossBlock;
  UOp jo = blocked ? UOp::Range(n / kAcrossBlock, next_range_++) : UOp();
  UOp ji = UOp::Range(blocked ? kAcrossBlock : n, next_range_++);
  const bool unrolled = rows && registers_ && !strided && unroll_rows_;
  UOp ri = rows ? UOp::Range(tile, next_range_++, unrolled ? RangeKind::kUnroll : RangeKind::kLoop)
                : UOp();
  UOp j2 = blocked ? jo * kAcrossBlock + ji : ji;
  UOp vj = RewriteNodes(v, [&](const UOp& orig, const UOp& rebuilt) {
    return orig == inner_ ? j2 : rows && orig == row_ ? ri : rebuilt;
  });
  if (rows && registers_ && !strided)
    vj = ColumnsOnce(vj, ji, ri, std::vector<UOp>(deps.begin() + 1, deps.end()));
  UOp slot = rows ? ri * n + j2 : j2;
  std::vector<UOp> after{acc, init};
  if (blocked) after.push_back(jo);
  after.insert(after.end(), loops.begin(), loops.end());
  // (in a register tile, a row's columns innermost: gcc keeps the tile's sums in registers
  // and reads each column of b once for all the rows)
  std::vector<UOp> inner{ji};
  if (rows) inner.insert(registers_ && !strided ? inner.begin() : inner.end(), ri);
  after.insert(after.end(), inner.begin(), inner.end());
  UOp accj = UOp::Derived(Ops::AFTER, after);
  UOp update = accj.Index(slot).Store(Update(op, accj.Index(slot).Load(), vj, fma_));
  for (size_t i = inner.size(); i-- > 0;) update = update.End({inner[i]});
  std::vector<UOp> end{update};
  end.insert(end.end(), loops.begin(), loops.end());
  UOp done = UOp::Derived(Ops::END, end);
  if (blocked) done = done.End({jo});
  return acc.After({done}).Index(rows ? row_ * n + inner_ : inner_).Load();
}

}  // namespace

UOp AccumulateKernel(const UOp& kernel, const Target& t) {
  Accumulator acc(kernel, t);
  const UOp out = RewriteNodes(kernel, [&](const UOp& orig, const UOp& rebuilt) {
    return orig.is(Ops::REDUCE) ? acc.Reduce(rebuilt) : rebuilt;
  });
  // the tile's loops are plain loops to the target's passes
  return RewriteNodes(out, [](const UOp& orig, const UOp& rebuilt) {
    return orig.is(Ops::RANGE) && InTile(orig)
               ? UOp::Range(rebuilt.src(0), orig.arg().Get<RangeArg>().idx, RangeKind::kLoop)
               : rebuilt;
  });
}

absl::StatusOr<UOp> ReduceToAccumulators(const UOp& lowered, const PassContext& ctx) {
  return MapKernels(lowered, "reduce_to_accumulators", [&](const UOp& k) -> absl::StatusOr<UOp> {
    return AccumulateKernel(k, ctx.TargetOf(KernelDevice(k)));
  });
}

}  // namespace uopc
