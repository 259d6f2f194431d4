#include "passes/launch_dims.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/bounds.h"
#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "passes/lowered_steps.h"

namespace uopc {
int64_t LargestDivisor(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

void LoopIndices(const std::vector<UOp>& loops, const UOp& flat,
                 absl::flat_hash_map<const UOp::Node*, UOp>& at) {
  int64_t stride = 1;
  for (const UOp& r : loops) stride *= *r.src(0).ConstIntValue();
  for (const UOp& r : loops) {
    const int64_t n = *r.src(0).ConstIntValue();
    stride /= n;
    UOp q = stride == 1 ? flat : flat.FloorDiv(stride);
    at[r.get()] = r == loops.front() ? q : q.Mod(n);
  }
}

namespace {

// Output loops of run-time length (a VAR in their ends): a grid of the blocks the run-time
// length needs (at most those of the largest length), in which a block's threads run to the
// run-time end: the local range ends at
// min(block size, elements left from the block on), so a thread past it does nothing (CUDA:
// it returns at once) and one kernel serves every length.
absl::StatusOr<UOp> MapRunTimeLengths(const UOp& kernel, const std::vector<UOp>& loops,
                                      const LaunchLimits& limits, LaunchDims* dims, int next) {
  const UOp& end = kernel.src(0);
  int64_t most = 1;
  UOp total = UOp::Int(1);
  for (const UOp& r : loops) {
    most *= std::max<int64_t>(1, VMax(r.src(0)));
    if (most > (int64_t{1} << 31) - 1) return kernel;  // (i32 indices)
    total = total * r.src(0);
  }
  if (most <= 1) return kernel;
  const int64_t local = std::min<int64_t>(limits.max_local, most);
  const int64_t global = (most + local - 1) / local;
  if (static_cast<uint64_t>(global) > limits.max_global || global > UINT32_MAX) return kernel;
  total = Simplify(total);
  // the grid for the run-time length: blocks of `local` over `total` (as many as `global` at
  // most), which a launch computes from the VAR values (a backend that launches the largest
  // grid has the blocks past it return)
  UOp g = UOp::Range(Simplify((total + (local - 1)).FloorDiv(local)), next, RangeKind::kGlobal);
  UOp left = Simplify(total - g * local);  // elements from this block on (<= 0: none)
  UOp l = UOp::Range(Simplify(left.Lt(local).Where(left, UOp::Int(local))), next + 1,
                     RangeKind::kLocal);
  UOp flat = g * local + l;
  absl::flat_hash_map<const UOp::Node*, UOp> index;
  UOp stride = total;
  for (const UOp& r : loops) {
    stride = Simplify(stride.FloorDiv(r.src(0)));
    UOp q = flat.FloorDiv(stride);
    index[r.get()] = r == loops.front() ? q : q.Mod(r.src(0));
  }
  UOp body = ReplaceNodes(end.src(0), index);
  UOp mapped = UOp::Sink({UOp::Derived(Ops::END, {Simplify(body), g, l})});
  *dims = LaunchDimsOf(mapped);
  return mapped;
}

}  // namespace

absl::StatusOr<UOp> MapToLaunchDims(const UOp& kernel, const LaunchLimits& limits,
                                    LaunchDims* dims) {
  *dims = LaunchDimsOf(kernel);
  if (*dims != LaunchDims{}) return kernel;  // (mapped already)
  // one store group: SINK(END(statement, r0, r1, ...)) of output loops
  if (!kernel.is(Ops::SINK) || kernel.src().size() != 1 || !kernel.src(0).is(Ops::END))
    return kernel;
  const UOp& end = kernel.src(0);
  std::vector<UOp> loops(end.src().begin() + 1, end.src().end());
  int next = 0;
  for (const UOp& u : kernel.Toposort())
    if (u.is(Ops::RANGE)) next = std::max(next, u.arg().Get<RangeArg>().idx + 1);
  int64_t total = 1;
  bool run_time = false;
  for (const UOp& r : loops) {
    if (!r.is(Ops::RANGE) || r.arg().Get<RangeArg>().kind != RangeKind::kLoop) return kernel;
    std::optional<int64_t> n = r.src(0).ConstIntValue();
    if (!n) {
      run_time = true;
      continue;
    }
    if (*n < 1) return kernel;
    total *= *n;
    if (total > (int64_t{1} << 40)) return kernel;
  }
  if (run_time) return MapRunTimeLengths(kernel, loops, limits, dims, next);
  if (total <= 1) return kernel;
  const int64_t local = LargestDivisor(total, limits.max_local), global = total / local;
  if (static_cast<uint64_t>(global) > limits.max_global || global > UINT32_MAX) return kernel;
  UOp g = UOp::Range(global, next, RangeKind::kGlobal),
      l = UOp::Range(local, next + 1, RangeKind::kLocal);
  UOp flat = local == 1 ? g : g * local + l;
  // each output loop's index from the flat one: (flat // stride) % size
  absl::flat_hash_map<const UOp::Node*, UOp> index;
  LoopIndices(loops, flat, index);
  UOp body = ReplaceNodes(end.src(0), index);
  std::vector<UOp> closed{Simplify(body), g};
  if (local > 1) closed.push_back(l);
  dims->global = {static_cast<uint32_t>(global), 1, 1};
  dims->local = {static_cast<uint32_t>(local), 1, 1};
  return UOp::Sink({UOp::Derived(Ops::END, closed)});
}

LaunchLimits LaunchLimits::For(const Target& t) {
  LaunchLimits l;
  if (t.threads_per_block > 0) l.max_local = std::min<uint32_t>(l.max_local, t.threads_per_block);
  return l;
}

absl::StatusOr<UOp> MapLaunchDims(const UOp& lowered, const PassContext& ctx) {
  return MapKernels(lowered, "launch_dims", [&](const UOp& k) -> absl::StatusOr<UOp> {
    const std::string device = KernelDevice(k);
    const Target& t = ctx.TargetOf(device);
    if (!t.IsGpu() || !ctx.MapsLaunch(device)) return k;
    LaunchDims dims;
    return MapToLaunchDims(k, LaunchLimits::For(t), &dims);
  });
}

}  // namespace uopc
