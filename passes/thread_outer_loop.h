// ThreadOuterLoop: gives the outermost output loop of a kernel to the cores. The loop that
// encloses a kernel's one store group outermost (of length n >= 2, at most n for a length
// known at run time, and part of every store's address, so that two iterations never write
// one element) becomes a global range of n: a CPU device runs it in chunks, one per worker
// thread, each chunk a contiguous part of the loop as long as it is at run time (the C
// renderer turns the range into the loop over the chunk's part). Reductions stay inside an
// iteration, so results are bit-identical to the single-threaded kernel. A kernel it cannot
// split, or too small to be worth waking threads for (fewer than `min_work` iterations of
// its deepest loop nest: the product of the largest lengths of the loops around a store),
// comes back as it was, with dims {1,1,1}; one given to the cores already comes back as it
// was, with the dims it was given (LaunchDimsOf).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

#include "core/kernel_signature.h"
#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

/// Fewer iterations than this (of a kernel's nested loops, a run-time length counted at its
/// largest) run on one thread. Between kernels the pool's workers spin (backends/c/
/// thread_pool.h), so a chunk reaches one in about a microsecond: 16K iterations (5-20 us)
/// are worth it. (At 256K, with 4x that for a run-time length, a 32-sequence decode step's
/// elementwise and softmax kernels ran on one thread while the other spun: 30% of its samples.)
inline constexpr int64_t kMinThreadedWork = 1 << 14;

/// `kernel` (a SINK of loop IR) with its outermost output loop a global range, and its
/// length in dims->global[0].
absl::StatusOr<UOp> ThreadOuterLoop(const UOp& kernel, LaunchDims* dims, int64_t min_work = 0);

/// The pass: every kernel of a CPU target whose backend takes its launch mapped
/// (PassContext::MapsLaunch) given to the cores where it has kMinThreadedWork.
absl::StatusOr<UOp> ThreadOuterLoops(const UOp& lowered, const PassContext& ctx = {});

}  // namespace uopc
