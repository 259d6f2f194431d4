// The GPU's kernel heuristics (passes/opts.h dispatches to them for a GPU target): a
// thread computes one output (the backend maps the output loops to threads and blocks:
// passes/launch_dims.h), so no CPU tile (register tiles, rows of sums on the stack) ever
// reaches a GPU kernel; a search may only unroll its reduction loops.
#pragma once

#include <vector>

#include "core/opt.h"
#include "core/target.h"
#include "passes/kernel_loops.h"

namespace uopc {

/// The defaults for `k` on `t`: none, one output a thread.
std::vector<Opt> GpuDefaultOpts(const KernelLoops& k, const Target& t);
/// Every single action that applies to `k` on `t`: unrolls of its reduction loops.
std::vector<Opt> GpuOptActions(const KernelLoops& k, const Target& t);

}  // namespace uopc
