// The lowered form that rangeify makes and every pass after it keeps:
// SINK(SINK(step, ...), SINK(output buffer, ...)), the steps in run order, each a kernel (a
// SINK of loop IR) or a copy or collective (ASSIGN(dst, COPY(src))). The passes that work
// on one kernel at a time (reduce_collapse, schedule_opts, reduce_to_accumulators,
// number_loops) map their function over the kernels with MapKernels.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/uop.h"

namespace uopc {

/// `lowered` with `fn` applied to each kernel step; InvalidArgument naming `pass` where
/// `lowered` is not the lowered form, or fn's error.
absl::StatusOr<UOp> MapKernels(const UOp& lowered, absl::string_view pass,
                               const std::function<absl::StatusOr<UOp>(const UOp&)>& fn);

/// A kernel's outermost statement and the loops around it (its output loops, outermost
/// first): the kernel is SINK(END(statement, loops...)), or SINK(statement) without loops.
struct TopLoops {
  UOp statement;
  std::vector<UOp> loops;
};
TopLoops TopLoopsOf(const UOp& kernel);

/// The first loop number (RANGE idx) that `kernel` does not use: where a pass that makes
/// loops numbers them from (number_loops numbers them in order at the end).
int NextLoopNumber(const UOp& kernel);

/// The device a kernel runs on: that of the buffer it stores into ("" for none).
std::string KernelDevice(const UOp& kernel);

}  // namespace uopc
