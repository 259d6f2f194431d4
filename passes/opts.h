// Opts: the kernel optimizations' heuristics and search space, apart from the loops they
// shape (schedule_opts applies them to a kernel's loops; runtime/kernel_search.h searches them),
// for the target the kernel is compiled for. A kernel is to them the lengths of its loops and
// whether it is a plain matmul:
//   - DefaultOpts: the target class's heuristics (passes/cpu_opts.h: a matmul's register
//     tile sized from the vector registers, sums along memory 4 rows at a time, else rows
//     of sums on the stack sized from L1;
//     passes/gpu_opts.h: none, one output a thread);
//   - OptActions: every single action (core/opt.h) the search may try on it;
//   - SplitsOf: what a list of actions asks of its loops, checked against the kernel and the
//     target (InvalidArgument names the action, the kernel's shape and what was expected).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "core/opt.h"
#include "core/target.h"
#include "passes/kernel_loops.h"

namespace uopc {

/// The default heuristics' actions for `k` on `t` (none for a kernel without a reduction).
std::vector<Opt> DefaultOpts(const KernelLoops& k, const Target& t);

/// Every single action that applies to `k` on `t`, for a search (none without a reduction).
std::vector<Opt> OptActions(const KernelLoops& k, const Target& t);

/// The splits `opts` ask of `k` on `t`; InvalidArgument if one does not apply (a GPU kernel
/// takes unrolls only).
absl::StatusOr<LoopSplits> SplitsOf(const KernelLoops& k, const std::vector<Opt>& opts,
                                    const Target& t);

}  // namespace uopc
