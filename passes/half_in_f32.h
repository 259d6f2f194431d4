// HalfInF32: within a kernel, arithmetic on f16 and bf16 values is carried in f32, and a
// value is rounded to its half where it leaves the arithmetic: where it is stored (to a
// buffer or an accumulator), converted to another dtype, compared, or read by anything but
// another half op. Each half op becomes the f32 op on the f32 values of its operands
// (a load or constant of a half, converted: exact), and its uses outside the chain read
// CAST(half, that). So a fused chain of elementwise ops rounds once, at its end, as
// PyTorch's Inductor and XLA compute fused half arithmetic, instead of after every op (which
// costs a software rounding per op on CPUs, and is no nearer the exact result). The
// rounding is explicit in the IR afterwards, so the interpreter and every backend compute
// the same bits for a kernel. One rounding per accumulate stays: an accumulator of a half
// is stored each time.
// Input and output: the lowered form (passes/lowered_steps.h).
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> HalfInF32(const UOp& lowered, const PassContext& ctx = {});

/// One kernel (a SINK of loop IR) with its half arithmetic carried in f32.
UOp HalfInF32Kernel(const UOp& kernel);

}  // namespace uopc
