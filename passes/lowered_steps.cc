#include "passes/lowered_steps.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

#include "core/status_macros.h"

namespace uopc {

absl::StatusOr<UOp> MapKernels(const UOp& lowered, absl::string_view pass,
                               const std::function<absl::StatusOr<UOp>(const UOp&)>& fn) {
  if (!lowered.is(Ops::SINK) || lowered.src().size() != 2 || !lowered.src(0).is(Ops::SINK))
    return absl::InvalidArgumentError(absl::StrCat(
        pass, ": expected SINK(SINK(steps), SINK(outputs)) (run rangeify first)"));
  std::vector<UOp> steps;
  for (const UOp& step : lowered.src(0).src()) {
    if (!step.is(Ops::SINK)) {
      steps.push_back(step);
      continue;
    }
    ASSIGN_OR_RETURN(UOp k, fn(step));
    steps.push_back(std::move(k));
  }
  return UOp::Sink({UOp::Sink(steps), lowered.src(1)});
}

TopLoops TopLoopsOf(const UOp& kernel) {
  const UOp& s = kernel.src(0);
  if (!s.is(Ops::END)) return {s, {}};
  return {s.src(0), std::vector<UOp>(s.src().begin() + 1, s.src().end())};
}

int NextLoopNumber(const UOp& kernel) {
  int next = 0;
  for (const UOp& u : kernel.Toposort())
    if (u.is(Ops::RANGE)) next = std::max(next, u.arg().Get<RangeArg>().idx + 1);
  return next;
}

std::string KernelDevice(const UOp& kernel) {
  for (const UOp& u : kernel.Toposort()) {
    if (!u.is(Ops::STORE)) continue;
    UOp b = u.src(0).src(0);
    while (b.is(Ops::AFTER)) b = b.src(0);
    if (b.is(Ops::BUFFER)) return b.arg().Get<ParamArg>().device;
  }
  return "";
}

}  // namespace uopc
