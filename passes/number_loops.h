// NumberLoops: numbers each kernel's loops (RANGE idx) and accumulators (ALLOC slot) in
// the order they first appear in the kernel, 0, 1, 2, ... The passes before it number
// their loops as they make them, so a kernel's numbers (and the names its source gives
// them: ridx3, acc1) would depend on how the passes got there; numbered afterwards, a
// kernel is the same text however it was lowered, which is what lets process replay
// prove that a change of the passes did not change the kernels.
// Input and output: SINK(SINK(step, ...), SINK(output buffers)), as rangeify makes it;
// copy and collective steps are left as they are.
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> NumberLoops(const UOp& lowered, const PassContext& ctx = {});

/// One kernel (a SINK of loop IR) with its loops and accumulators numbered in order.
UOp NumberKernelLoops(const UOp& kernel);

}  // namespace uopc
