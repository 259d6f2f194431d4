#include "passes/number_loops.h"

#include "absl/container/flat_hash_map.h"

#include "core/substitute.h"
#include "passes/lowered_steps.h"

namespace uopc {

UOp NumberKernelLoops(const UOp& kernel) {
  absl::flat_hash_map<const UOp::Node*, int> number;
  int ranges = 0, allocs = 0;
  for (const UOp& u : kernel.Toposort()) {
    if (u.is(Ops::RANGE)) number[u.get()] = ranges++;
    if (u.is(Ops::ALLOC)) number[u.get()] = allocs++;
  }
  return RewriteNodes(kernel, [&](const UOp& orig, const UOp& rebuilt) {
    auto it = number.find(orig.get());
    if (it == number.end()) return rebuilt;
    if (orig.is(Ops::RANGE))  // (its end may hold other loops: the rebuilt one's)
      return UOp::Range(rebuilt.src(0), it->second, orig.arg().Get<RangeArg>().kind);
    ParamArg p = orig.arg().Get<ParamArg>();
    p.slot = it->second;
    return UOp::Make(Ops::ALLOC, orig.dtype(), {}, std::move(p));
  });
}

absl::StatusOr<UOp> NumberLoops(const UOp& lowered, const PassContext&) {
  return MapKernels(lowered, "number_loops",
                    [](const UOp& k) -> absl::StatusOr<UOp> { return NumberKernelLoops(k); });
}

}  // namespace uopc
