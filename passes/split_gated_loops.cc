#include "passes/split_gated_loops.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "passes/lowered_steps.h"

namespace uopc {
namespace {

// More pieces than this are left as one loop (each piece repeats the kernel's expression).
constexpr size_t kMaxPieces = 8;

// Where the gates of `loop` in `body` cut [0, n): c for loop < c, c + 1 for c < loop.
std::vector<int64_t> Cuts(const UOp& body, const UOp& loop, int64_t n) {
  std::set<int64_t> cuts;
  for (const UOp& u : body.Toposort()) {
    if (!u.is(Ops::CMPLT)) continue;
    std::optional<int64_t> c;
    if (u.src(0) == loop) c = u.src(1).ConstIntValue();
    if (u.src(1) == loop && (c = u.src(0).ConstIntValue())) ++*c;
    if (c && *c > 0 && *c < n) cuts.insert(*c);
  }
  return {cuts.begin(), cuts.end()};
}

// The largest d of the loop / d and loop % d in `body` that divides its length n (1 < d < n),
// or 0.
int64_t Divisor(const UOp& body, const UOp& loop, int64_t n) {
  int64_t best = 0;
  for (const UOp& u : body.Toposort()) {
    if (!(u.is(Ops::FLOORDIV) || u.is(Ops::MOD)) || u.src(0) != loop) continue;
    const std::optional<int64_t> d = u.src(1).ConstIntValue();
    if (d && *d > 1 && *d < n && n % *d == 0 && *d > best) best = *d;
  }
  return best;
}

UOp Replace(const UOp& root, const UOp& from, const UOp& to) {
  return RewriteNodes(
      root, [&](const UOp& orig, const UOp& rebuilt) { return orig == from ? to : rebuilt; });
}

UOp EndOf(const UOp& statement, const std::vector<UOp>& loops) {
  std::vector<UOp> src{statement};
  src.insert(src.end(), loops.begin(), loops.end());
  return UOp::Make(Ops::END, DType::kVoid, src);
}

}  // namespace

UOp SplitGatedLoop(const UOp& kernel) {
  if (!kernel.is(Ops::SINK) || kernel.src().size() != 1) return kernel;
  const TopLoops top = TopLoopsOf(kernel);
  if (top.loops.empty() || !top.statement.is(Ops::STORE)) return kernel;
  const UOp& loop = top.loops.back();
  if (!loop.is(Ops::RANGE) || loop.arg().Get<RangeArg>().kind != RangeKind::kLoop) return kernel;
  const std::optional<int64_t> n = loop.src(0).ConstIntValue();
  if (!n) return kernel;
  // an elementwise statement: no loop of its own (a reduction's), which each piece would
  // repeat, and no accumulator
  for (const UOp& u : top.statement.Toposort())
    if (u.is(Ops::END) || u.is(Ops::AFTER) || u.is(Ops::ALLOC) ||
        (u.is(Ops::RANGE) && std::find(top.loops.begin(), top.loops.end(), u) == top.loops.end()))
      return kernel;
  std::vector<int64_t> cuts = Cuts(top.statement, loop, *n);
  if (cuts.empty() || cuts.size() + 1 > kMaxPieces) return kernel;
  cuts.insert(cuts.begin(), 0);
  cuts.push_back(*n);
  int next = NextLoopNumber(kernel);
  std::vector<UOp> pieces;
  for (size_t p = 0; p + 1 < cuts.size(); ++p) {
    const int64_t lo = cuts[p], length = cuts[p + 1] - lo;
    const UOp q = UOp::Range(length, next++);
    UOp store = Simplify(Replace(top.statement, loop, lo ? q + lo : q));
    std::vector<UOp> loops{q};
    if (const int64_t d = Divisor(store, q, length)) {
      const UOp outer = UOp::Range(length / d, next++), inner = UOp::Range(d, next++);
      store = Simplify(Replace(store, q, outer * d + inner));
      loops = {outer, inner};
    }
    pieces.push_back(EndOf(store, loops));
  }
  const UOp body = UOp::Sink(pieces);
  if (top.loops.size() == 1) return UOp::Sink({body});
  return UOp::Sink({EndOf(body, std::vector<UOp>(top.loops.begin(), top.loops.end() - 1))});
}

absl::StatusOr<UOp> SplitGatedLoops(const UOp& lowered, const PassContext& ctx) {
  return MapKernels(lowered, "split_gated_loops", [&](const UOp& k) -> absl::StatusOr<UOp> {
    return ctx.TargetOf(KernelDevice(k)).IsCpu() ? SplitGatedLoop(k) : k;
  });
}

}  // namespace uopc
