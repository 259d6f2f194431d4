#include "passes/split_reduces.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

#include "core/placement.h"
#include "core/status_macros.h"
#include "core/substitute.h"
#include "core/verify.h"

namespace uopc {
namespace {

// The chunk a long reduction of `n` inputs is split into: the largest divisor of n up to
// max(sqrt(n), 256), capped at kMaxThreadInputs; 0 if there is none above 1.
int64_t ChunkOf(int64_t n) {
  const int64_t target =
      std::min(kMaxThreadInputs, std::max<int64_t>(256, static_cast<int64_t>(std::sqrt(n))));
  for (int64_t c = std::min(target, n / 2); c > 1; --c)
    if (n % c == 0 && n / c <= kMaxThreadInputs) return c;
  return 0;
}

UOp Dims(Ops op, const UOp& x, const std::vector<int64_t>& dims) {
  std::vector<UOp> src{x};
  for (int64_t d : dims) src.push_back(UOp::Int(d));
  return UOp::Derived(op, src);
}

// The partial results a CPU splits a long reduction of `n` inputs into: the largest divisor
// of n up to kCpuPartials, with at least as many inputs to each; 0 if none is 64 or more.
int64_t CpuPartialsOf(int64_t n) {
  for (int64_t g = std::min(kCpuPartials, n / kCpuPartials); g >= 64; --g)
    if (n % g == 0) return g;
  return 0;
}

// REDUCE(x, axes) of shape `in` as two, the reduced axes last and flattened: for a GPU, to
// (groups, chunk), summed over the chunk (staged on `device`), then over the groups; for a
// CPU, to (rows, partials), summed over the rows (each partial a column: the partials are
// vectors' lanes and threads' shares), then over the partials. Reshaped to the REDUCE's shape
// (its reduced axes kept as 1). Null if `in` is not static or has no such split.
UOp Split(const UOp& reduce, const UOp& x, const Shape& in, const std::string& device,
          bool gpu) {
  const ReduceArg& arg = reduce.arg().Get<ReduceArg>();
  std::vector<int> order;
  std::vector<int64_t> kept, out_shape;
  int64_t reduced = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!in[d].IsStatic()) return UOp();
    const bool r = std::find(arg.axes.begin(), arg.axes.end(), static_cast<int>(d)) != arg.axes.end();
    if (!r) order.push_back(static_cast<int>(d)), kept.push_back(in[d].value());
    out_shape.push_back(r ? 1 : in[d].value());
    if (r) reduced *= in[d].value();
  }
  // (the length of the last axis: a GPU's chunk, a CPU's partials)
  const int64_t chunk = gpu ? ChunkOf(reduced) : CpuPartialsOf(reduced);
  if (chunk == 0 || (gpu && reduced <= kMaxThreadInputs)) return UOp();
  for (int a : arg.axes) order.push_back(a);
  const int k = static_cast<int>(kept.size());
  std::vector<int64_t> split = kept;
  split.insert(split.end(), {reduced / chunk, chunk});
  // (a GPU sums each chunk first, a CPU each column of the rows of chunks)
  const int first = gpu ? k + 1 : k, second = gpu ? k : k + 1;
  UOp moved = UOp::Derived(Ops::PERMUTE, {x}, Axes{order});
  UOp parts = UOp::Derived(
      Ops::STAGE,
      {UOp::Derived(Ops::REDUCE, {Dims(Ops::RESHAPE, moved, split)}, ReduceArg{arg.op, {first}})},
      DeviceArg{device});
  UOp whole = UOp::Derived(Ops::REDUCE, {parts}, ReduceArg{arg.op, {second}});
  return Dims(Ops::RESHAPE, whole, out_shape);
}

// The product of `r`'s reduced dims (the inputs of each output), or of its kept dims (its
// outputs); 0 if one is not static.
int64_t CountOf(const UOp& r, const ShapeMap& shapes, bool reduced) {
  const Shape& in = shapes.at(r.src(0).get());
  const std::vector<int>& axes = r.arg().Get<ReduceArg>().axes;
  int64_t n = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    if ((std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end()) != reduced)
      continue;
    if (!in[d].IsStatic()) return 0;
    n *= in[d].value();
  }
  return n;
}
int64_t Reduced(const UOp& r, const ShapeMap& shapes) { return CountOf(r, shapes, true); }

// The outermost REDUCEs in `r`'s body, up to what is materialized (a STAGE, a BUFFER).
std::vector<UOp> NestedReduces(const UOp& r) {
  std::vector<UOp> out, stack{r.src(0)};
  absl::flat_hash_set<const UOp::Node*> seen;
  while (!stack.empty()) {
    UOp x = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(x.get()).second || x.is(Ops::STAGE) || x.is(Ops::BUFFER)) continue;
    if (x.is(Ops::REDUCE)) {
      out.push_back(x);
      continue;
    }
    for (const UOp& src : x.src()) stack.push_back(src);
  }
  return out;
}

}  // namespace

absl::StatusOr<UOp> SplitReduces(const UOp& g, const PassContext& ctx) {
  ASSIGN_OR_RETURN(ShapeMap shapes, InferShapes(g));
  Placement place;
  auto gpu = [&](const UOp& u) -> std::optional<std::string> {
    absl::StatusOr<std::string> device = place.Of(u);
    if (!device.ok() || !ctx.TargetOf(*device).IsGpu()) return std::nullopt;
    return *device;
  };
  // a reduction inside another's body, where together one thread would read more than
  // kMaxThreadInputs (a loss's sum over rows of a sum over the vocabulary): a kernel of its
  // own, one thread an output
  absl::flat_hash_map<const UOp::Node*, std::string> staged;
  for (const UOp& r : g.Toposort()) {
    if (!r.is(Ops::REDUCE) || !gpu(r)) continue;
    const std::vector<UOp> inner = NestedReduces(r);
    int64_t most = 0;
    for (const UOp& i : inner) most = std::max(most, Reduced(i, shapes));
    if (inner.empty() || Reduced(r, shapes) * most <= kMaxThreadInputs) continue;
    for (const UOp& i : inner)
      if (std::optional<std::string> d = gpu(i)) staged[i.get()] = *d;
  }
  // a CPU's long reduction to a few outputs (a gradient norm): its inputs one chain of adds
  // on one core, a few cycles each, unless split
  auto long_on_cpu = [&](const UOp& r) -> std::optional<std::string> {
    absl::StatusOr<std::string> device = place.Of(r);
    if (!device.ok() || !ctx.TargetOf(*device).IsCpu()) return std::nullopt;
    const int64_t outputs = CountOf(r, shapes, false);
    if (outputs == 0 || outputs > kCpuFewOutputs || Reduced(r, shapes) < kCpuLongReduce)
      return std::nullopt;
    return *device;
  };
  return RewriteNodes(g, [&](const UOp& orig, const UOp& rebuilt) {
    if (!orig.is(Ops::REDUCE)) return rebuilt;
    const bool associative = IsAssociative(orig.arg().Get<ReduceArg>().op);
    const Shape& in = shapes.at(orig.src(0).get());
    if (std::optional<std::string> cpu = long_on_cpu(orig); cpu && associative)
      if (UOp split = Split(orig, rebuilt.src(0), in, *cpu, false)) return split;
    const std::optional<std::string> device = gpu(orig);
    if (!device) return rebuilt;
    UOp out = rebuilt;
    if (associative)
      if (UOp split = Split(orig, rebuilt.src(0), in, *device, true)) out = split;
    if (staged.contains(orig.get())) out = UOp::Derived(Ops::STAGE, {out}, DeviceArg{*device});
    return out;
  });
}

}  // namespace uopc
