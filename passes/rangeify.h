// Rangeify: lowers each kernel of a kernelized graph to loop IR, in the run order
// kernel_order gave. A kernel loops over its output's shape and stores, at every index, the
// value of the staged expression there: movement ops become index arithmetic
// (passes/indexing.h: each defined once; PAD becomes a mask, with the index clamped so that
// no load goes out of bounds), ALU ops stay ALU ops, and a REDUCE becomes a loop-level
// REDUCE(value, loops...) over a new loop for each reduced axis, which the passes after it
// rewrite (reduce_collapse), schedule (schedule_opts) and make accumulators
// (reduce_to_accumulators).
//
// Buffers: the graph's input BUFFERs keep their slots 0..I-1; each STAGE gets a buffer of
// its own, slots I, I+1, ... in topological order of the roots, on the STAGE's device. A
// STAGE of a COPY is no kernel but a copy step, ASSIGN(BUFFER dst, COPY[device](BUFFER src)).
// An in-place ASSIGN(view of a BUFFER, value) is a kernel that loops over the view and
// stores the value where the view reads; its root's buffer is the BUFFER it wrote.
// Input: SINK(SINK(kernel in run order, ...), SINK(root, ...)) (from kernel_order).
// Output: the lowered form (passes/lowered_steps.h): SINK(SINK(step, ...), SINK(BUFFER of
// each root, ...)), each step a kernel (a SINK of loop IR) or a copy.
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> Rangeify(const UOp& ordered, const PassContext& ctx = {});

}  // namespace uopc
