// ReduceToAccumulators: each loop-level REDUCE(value, loops...) becomes an accumulator: a
// variable (ALLOC) set to the op's identity, a loop over the reduction's loops that updates
// it, and a load of it after them. The accumulator is placed outside every loop its value
// does not depend on (which is only right once indices are simplified, the seed's NOTES 12:
// the value is simplified first). Where the kernel's loops were split into a tile
// (schedule_opts: RangeKind upcast or group), a reduction that varies along the tile's
// columns and reads memory evenly along them is computed for all of them at once, in an
// array, with the reduction's loops outside a loop over the array (a matmul then walks
// rows of both operands, and vectorizes); with a tile of rows too, each value read for a
// column serves every row. Every sum still runs in the reduction's order. The tile's loops
// are plain loops afterwards. On a target that multiplies and adds in one instruction (a
// CPU with FMA, every GPU), a sum of products of f32 (f64) is updated by MULACC: a * b + acc
// rounded once, as BLAS libraries compute it (twice the arithmetic rate of a separate
// multiply and add on CPUs whose vector units each do one or the other). Input and output: the lowered form (passes/lowered_steps.h).
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/target.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> ReduceToAccumulators(const UOp& lowered, const PassContext& ctx = {});

/// One kernel (a SINK of loop IR) with its REDUCEs made accumulators, for target `t`.
UOp AccumulateKernel(const UOp& kernel, const Target& t);

}  // namespace uopc
