// KernelOrder: the order the kernels of a kernelized graph run in. Each kernel (a STAGE, or
// an in-place write ASSIGN) runs after the kernels it reads (or whose writes it reads,
// through AFTER), and each write after every kernel that reads the buffer it writes without
// depending on the write (those read the old contents); otherwise a collective as soon as it
// can run (it runs while the kernels after it do), and the rest in the graph's order.
// Input: SINK of STAGE(root) or ASSIGN roots (from kernelize). Output: SINK(SINK(kernel, ...),
// SINK(root, ...)): the kernels in run order, then the roots as they were. A read of a
// buffer both before and after a write to it that no order satisfies is InvalidArgument.
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> KernelOrder(const UOp& staged, const PassContext& ctx = {});

}  // namespace uopc
