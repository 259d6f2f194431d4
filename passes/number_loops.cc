#include "passes/number_loops.h"

#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/substitute.h"

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
    const ParamArg& p = orig.arg().Get<ParamArg>();
    return UOp::Alloc(orig.dtype(), it->second, p.size);
  });
}

absl::StatusOr<UOp> NumberLoops(const UOp& lowered, const PassContext&) {
  if (!lowered.is(Ops::SINK) || lowered.src().size() != 2 || !lowered.src(0).is(Ops::SINK))
    return absl::InvalidArgumentError(
        "number_loops: expected SINK(SINK(steps), SINK(outputs)) (run rangeify first)");
  std::vector<UOp> steps;
  for (const UOp& step : lowered.src(0).src())
    steps.push_back(step.is(Ops::SINK) ? NumberKernelLoops(step) : step);
  return UOp::Sink({UOp::Sink(steps), lowered.src(1)});
}

}  // namespace uopc
