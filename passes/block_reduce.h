// BlockReduce: on a GPU, a long reduction is computed by T threads an output, not by one.
// One thread an output (passes/launch_dims.h) leaves most of a GPU idle where there are fewer
// outputs than a warp a multiprocessor, and a thread that walks a row alone reads memory its
// neighbours do not share. Instead, a block (a global range) computes R outputs, each by T of
// its L = R x T threads (a local range): thread l reduces every T-th input of output l / T
// from its lane (l % T) on (inputs lane, T + lane, 2T + lane, ..., so that a warp reads
// consecutive inputs), then log2(T) stages, each behind a BARRIER, combine an output's lanes
// in pairs (lane < h: lanes l and l + h, for h = T/2, T/4, ..., 1), each stage from one array
// of L into another: the block's shared memory (ALLOC in kSharedMemory), or, from h = warp on
// (and for the lanes' own results where T <= warp), where the next stage reads only what its
// warp wrote, the warp's registers (ALLOC in kWarpRegisters: a GPU reads them c lanes up by a
// shuffle, and waits for no one else). The last stage writes shared memory, and the block
// stores its outputs (element r x T for its r-th), with whatever the kernel computed from the
// reduction. The order of the sum is fixed (each lane's inputs in order, then that tree), so
// every backend gives the same bits: CUDA runs the threads side by side (__syncthreads after
// a stage that wrote shared memory, __shfl_down_sync for the registers, the stores by the
// block's first thread), the C plugin's emulated GPU and the interpreter run them in turn (a
// local range is a loop, each stage's after the last; the registers an array). The order
// differs from one thread's, so a float result may differ from a CPU's in its last bits.
//
// Taken where the kernel is one store of an expression of one REDUCE (ADD or MAX of f32)
// over loops of constant length N, with outputs (loops of constant length) O:
//  - a block an output (R = 1) where O is at most the target's multiprocessors times its
//    warp and N >= kBlockReduceInputs: T the largest power of two from the warp to
//    min(256, the target's block) that divides N with N / T >= 4, else the largest with
//    N / T >= 4;
//  - else a warp an output (T = warp, R the largest divisor of O up to 256 / warp) where
//    N >= kWarpReduceInputs and the reduction reads its rows along memory (every read steps
//    by 1 or 0 along its inner loop: a layer norm's, a softmax's, a loss's over a vocabulary);
// where T does not divide N, the lanes past the last input in the last step read that input
// and take the op's identity (0, -inf) instead;
// and where the block's shared memory holds two arrays of L. Anything else (sums down the
// columns of many outputs, whose neighbouring threads read neighbouring columns; an unrolled
// reduction from the search; a reduction inside another; a run-time length) is left to one
// thread an output. The pipeline runs it before reduce_to_accumulators, which makes the
// reductions accumulators; launch_dims keeps the mapping it made.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/target.h"
#include "core/uop.h"

namespace uopc {

/// The fewest inputs a reduction has for a block to reduce it, and for a warp to.
inline constexpr int64_t kBlockReduceInputs = 256, kWarpReduceInputs = 64;

/// One kernel (a SINK of loop IR, REDUCEs not yet accumulators) with its reduction given to
/// blocks of threads where `t` gains by it (see above); else the kernel as it was.
UOp BlockReduceKernel(const UOp& kernel, const Target& t);

/// The pass: BlockReduceKernel on every kernel of a GPU target whose backend takes its launch
/// mapped (PassContext::MapsLaunch).
absl::StatusOr<UOp> BlockReduce(const UOp& lowered, const PassContext& ctx = {});

}  // namespace uopc
