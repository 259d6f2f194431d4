// SplitReduces: for a GPU target, a reduction too long for one thread becomes two: partial
// reductions of chunks, each chunk a thread's (a kernel of its own), then the reduction of
// the partials. A GPU kernel gives each output a thread (passes/gpu_opts.h), so a sum to a
// scalar (a loss, a gradient norm) would run on one thread over every element; split, no
// thread reads more than kMaxThreadInputs; and a reduction inside another's body (a sum
// over rows of a sum over a row), where one thread would read more than that through both,
// is a kernel of its own. The chunk is the largest divisor of the
// reduction's length up to its square root (at least 256 where one divides it), so both
// reductions are short and the first has many threads; a length with no such divisor stays
// as it is. On a CPU, a long reduction to a few outputs (a gradient's norm) is a chain of
// dependent adds on one core unless split: its inputs as rows of up to 1,024 columns, each
// column summed (vectors' lanes, threads' shares), then the columns. Associative reductions
// only (core/ops.h: ADD, MAX, ...); the order of a float sum changes, so a GPU's result may
// differ from a CPU's in its last bits. Input and output: a SINK of tensor-level roots
// (before kernelize).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

/// The most inputs one GPU thread reduces before a reduction is split.
inline constexpr int64_t kMaxThreadInputs = 4096;
/// On a CPU, a reduction to at most kCpuFewOutputs outputs of at least kCpuLongReduce inputs
/// each is split into up to kCpuPartials partial results (columns of its inputs as rows of
/// that many), which vectors and threads compute side by side, then their reduction.
inline constexpr int64_t kCpuFewOutputs = 16, kCpuLongReduce = int64_t{1} << 17,
                         kCpuPartials = 1024;

absl::StatusOr<UOp> SplitReduces(const UOp& sink, const PassContext& ctx = {});

}  // namespace uopc
