// BlockReduce: on a GPU, a long reduction to few outputs is computed by a block of threads
// an output, not by one thread. One thread an output (passes/launch_dims.h) leaves most of
// a GPU idle where there are fewer outputs than a warp a multiprocessor, and a thread that
// walks a row alone reads memory its neighbours do not share. Instead, output o is block o's
// (a global range over the outputs), and its L threads (a local range) each reduce every
// L-th input from their own on (thread l: inputs l, L + l, 2L + l, ..., so that a warp reads
// consecutive inputs), into storage the block shares (ALLOC in kSharedMemory, L elements);
// then log2(L) stages, each behind a BARRIER, combine them in pairs (thread l < h: l and
// l + h, for h = L/2, L/4, ..., 1), each from one array into another: the block's shared
// memory, or, from h = warp on, where the next stage reads only what the first warp wrote,
// the warp's registers (ALLOC in kWarpRegisters: a GPU reads them c lanes up by a shuffle,
// and waits for no one else); the last stage writes shared memory, and the block stores the
// output, with whatever the kernel computed from the reduction. The order of the sum is fixed
// (each thread's inputs in order, then that tree), so every backend gives the same bits: CUDA
// runs the threads side by side (__syncthreads after a stage that wrote shared memory,
// __shfl_down_sync for the registers, the store by the block's first thread), the C plugin's
// emulated GPU and the interpreter run them in turn (a local range is a loop, each stage's
// after the last; the registers an array). The order differs from one thread's, so a float
// result may differ from a CPU's in its last bits.
//
// Taken where the kernel is one store of an expression of one REDUCE (ADD or MAX of f32)
// over loops of constant length N >= kBlockReduceInputs, its outputs (loops of constant
// length) number no more than the target's multiprocessors times its warp, and a power of two
// L between the warp and min(256, the target's block) divides N with N / L >= 4 (the largest
// such), and the block's shared memory holds two arrays of L. Anything else (an unrolled reduction
// from the search, a reduction inside another, a run-time length) is left to one thread an output.
// The pipeline runs it before reduce_to_accumulators, which makes both reductions accumulators;
// launch_dims keeps the mapping it made.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/target.h"
#include "core/uop.h"

namespace uopc {

/// The fewest inputs a reduction has for a block to reduce it.
inline constexpr int64_t kBlockReduceInputs = 256;

/// One kernel (a SINK of loop IR, REDUCEs not yet accumulators) with its reduction given to
/// blocks of threads where `t` gains by it (see above); else the kernel as it was.
UOp BlockReduceKernel(const UOp& kernel, const Target& t);

/// The pass: BlockReduceKernel on every kernel of a GPU target whose backend takes its launch
/// mapped (PassContext::MapsLaunch).
absl::StatusOr<UOp> BlockReduce(const UOp& lowered, const PassContext& ctx = {});

}  // namespace uopc
