// SuppliedKernels: a kernel that is a plain matmul becomes a call of the matmul kernel the
// device's plugin supplies (core/target.h's SuppliedKernel, ABI 2.1), in place of generated
// code: MATMUL(out, a, b, params...) (core/matmul_call.h), which the device runs through its
// plugin's kernel_launch. A kernel qualifies when it is one store of one sum of products of
// two loads (each through a cast from a half to f32, or none), rounded to out's dtype or
// not; every index is affine in the loops (up to two batches, rows, columns, the sum's:
// adjacent loops that every operand walks as one count as one), out's columns
// are contiguous, a and b each lie in a BLAS layout (contiguous along one axis, the other
// stride at least that axis's length), out is neither of them; and the target lists a
// "matmul" kernel of these dtypes whose min_flops the work reaches (at the loops' largest
// lengths, for a symbolic shape). Lengths and offsets stay index expressions, so one plan
// serves every value of a VAR. Other kernels, and every kernel of a target without
// supplied kernels, pass through unchanged.
// Input and output: the lowered form (passes/lowered_steps.h), after reduce_collapse.
#pragma once

#include <optional>

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/target.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> SuppliedKernels(const UOp& lowered, const PassContext& ctx = {});

/// The MATMUL call that runs `kernel` (a SINK of loop IR) on `t`, or nullopt where it does
/// not qualify (above).
std::optional<UOp> MatmulCallOf(const UOp& kernel, const Target& t);

}  // namespace uopc
