// The CPU's kernel heuristics (passes/opts.h dispatches to them for a CPU target): a
// matmul's sums in a register tile sized from the target's vector width and registers;
// sums that read along memory (a row's mean) 4 rows at a time; else a reducing kernel's sums
// in a row on the stack sized from its L1 cache; and the actions a search may try on a CPU
// kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "core/opt.h"
#include "core/target.h"
#include "passes/kernel_loops.h"

namespace uopc {

/// The defaults for `k` on `t` (none for a kernel without a reduction).
std::vector<Opt> CpuDefaultOpts(const KernelLoops& k, const Target& t);
/// Every single action that applies to `k` on `t`.
std::vector<Opt> CpuOptActions(const KernelLoops& k, const Target& t);
/// The most sums a register tile may hold: every vector register full of f32 sums (512 with
/// AVX-512's 32 registers of 16 floats).
int64_t CpuMaxRegisterTile(const Target& t);
/// The longest row of sums on the stack: the largest power of two of floats that four rows
/// of fit in a quarter of L1 (512 for a 32 or 48 KiB L1).
int64_t CpuMaxGroupColumns(const Target& t);

}  // namespace uopc
