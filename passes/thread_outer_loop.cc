#include "passes/thread_outer_loop.h"

#include <algorithm>
#include <cstdint>

#include "core/bounds.h"
#include "core/substitute.h"
#include "passes/lowered_steps.h"
#include "passes/scope.h"

namespace uopc {
namespace {

// The iterations of the kernel's deepest loop nest: the most, over its stores, of the product
// of the largest lengths of the loops open at the store (a loop beside another, such as an
// accumulator's setup or its store, adds to the work rather than multiplying it).
int64_t Work(const UOp& kernel) {
  const ScopeAnalysis scopes(kernel);
  int64_t most = 1;
  for (const UOp& u : kernel.Toposort()) {
    if (!u.is(Ops::STORE)) continue;
    constexpr int64_t kMost = int64_t{1} << 40;  // (enough to say: a lot; no overflow)
    int64_t n = 1;
    for (const UOp::Node* r : scopes.Of(u)) {
      const int64_t length = std::max<int64_t>(1, VMax(scopes.Range(r).src(0)));
      n = n > kMost / length ? kMost : n * length;
    }
    most = std::max(most, n);
  }
  return most;
}

}  // namespace

absl::StatusOr<UOp> ThreadOuterLoop(const UOp& kernel, LaunchDims* dims, int64_t min_work) {
  *dims = LaunchDimsOf(kernel);
  if (*dims != LaunchDims{}) return kernel;  // (given to the cores already)
  // one store group: SINK(END(statement, outermost loop, ...))
  if (!kernel.is(Ops::SINK) || kernel.src().size() != 1 || !kernel.src(0).is(Ops::END) ||
      kernel.src(0).src().size() < 2)
    return kernel;
  const UOp& end = kernel.src(0);
  const UOp& outer = end.src(1);
  if (!outer.is(Ops::RANGE) || outer.arg().Get<RangeArg>().kind != RangeKind::kLoop) return kernel;
  // (a run-time length: the launch is sized for its largest value, and each chunk takes its
  // part of the length the kernel is run with)
  const int64_t n = VMax(outer.src(0));
  if (n < 2 || n > UINT32_MAX) return kernel;
  bool stores = false;
  for (const UOp& u : end.src(0).Toposort()) {
    if (!u.is(Ops::STORE)) continue;
    // into memory: the address moves with the loop, else every iteration writes there; into
    // an accumulator: it is the loop's (AFTER the loop), else the reduction runs outside the
    // loop and every chunk would repeat it
    if (!Reaches(u.src(0), outer)) return kernel;
    stores = true;
  }
  if (!stores) return kernel;
  if (Work(kernel) < min_work) return kernel;  // (a run-time length counts at its largest)
  const UOp global = UOp::Range(outer.src(0), outer.arg().Get<RangeArg>().idx, RangeKind::kGlobal);
  UOp out = RewriteNodes(kernel, [&](const UOp& orig, const UOp& rebuilt) {
    return orig == outer ? global : rebuilt;
  });
  dims->global = {static_cast<uint32_t>(n), 1, 1};
  return out;
}

absl::StatusOr<UOp> ThreadOuterLoops(const UOp& lowered, const PassContext& ctx) {
  return MapKernels(lowered, "thread_outer_loop", [&](const UOp& k) -> absl::StatusOr<UOp> {
    const std::string device = KernelDevice(k);
    if (!ctx.TargetOf(device).IsCpu() || !ctx.MapsLaunch(device)) return k;
    LaunchDims dims;
    return ThreadOuterLoop(k, &dims, kMinThreadedWork);
  });
}

}  // namespace uopc
