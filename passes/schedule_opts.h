// ScheduleOpts: splits each reducing kernel's loops by a list of optimization actions
// (core/opt.h), the heuristics' for its target (passes/opts.h) or the one ctx.choose_opts
// picks from every action that applies (runtime/kernel_search.h times them, each kernel
// built through reduce_to_accumulators). The kernel is read as the opts see it (its output
// loops' lengths, its first reduction's loops, whether it is a plain matmul: each
// reduction a sum of products of two loads, through float casts to or from a half and a
// PAD's mask; whether a read steps along the reduction in memory and across the rows) off
// its loop IR, where reduce_collapse has taken out the loops that were loads. The splits
// keep every sum's order:
//   - upcast: a register tile of rows x columns, blocks of its columns outermost, then
//     tiles of rows, then the tile's rows and columns (RangeKind upcast);
//   - group: a row of columns' sums on the stack, in groups of rows (RangeKind group);
//   - unroll: a reduction loop in steps of N (every reduction of the kernel whose loop N
//     divides).
// reduce_to_accumulators reads the tile from the loops' kinds.
// Input and output: the lowered form (passes/lowered_steps.h), kernels with loop-level
// REDUCEs.
#pragma once

#include <vector>

#include "absl/status/statusor.h"

#include "core/opt.h"
#include "core/pass_manager.h"
#include "core/target.h"
#include "core/uop.h"
#include "passes/kernel_loops.h"

namespace uopc {

absl::StatusOr<UOp> ScheduleOpts(const UOp& lowered, const PassContext& ctx = {});

/// A kernel (a SINK of loop IR with loop-level REDUCEs) as the opts see it.
KernelLoops KernelLoopsOf(const UOp& kernel);

/// `kernel` (whose loops are `loops`) with `opts` applied for `t`; InvalidArgument if one
/// does not apply.
absl::StatusOr<UOp> ApplyOpts(const UOp& kernel, const KernelLoops& loops,
                              const std::vector<Opt>& opts, const Target& t);

}  // namespace uopc
