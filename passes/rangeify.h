// Rangeify: lowers a kernelized tensor graph to loop IR, one kernel per STAGE. Each
// kernel loops over its output's shape and stores, at every index, the value of the
// staged expression there: movement ops become index arithmetic through ravel/unravel
// (PAD becomes a mask, with the index clamped so that no load goes out of bounds), ALU
// ops stay ALU ops, and a REDUCE becomes an accumulator, a loop over the reduced axes and
// an update. The accumulator is placed outside every loop its value does not depend on,
// which is only right once indices are simplified (the seed's NOTES 12): the reduced value
// is simplified before its loops are read off.
//
// Buffers: the graph's input BUFFERs keep their slots 0..I-1; each STAGE gets a buffer of
// its own, slots I, I+1, ... in topological order, on the STAGE's device. A STAGE of a
// COPY is no kernel but a copy step, ASSIGN(BUFFER dst, COPY[device](BUFFER src)). An
// in-place root ASSIGN(view of a BUFFER, value) is a kernel that loops over the view and
// stores the value where the view reads; its root's buffer is the BUFFER it wrote.
// How a reducing kernel's loops are split and ordered is a list of actions (core/opt.h:
// upcast, group, unroll), each keeping every sum's order: the default heuristics' list
// (a matmul's register tile, other reductions' rows of sums), or the one ctx.choose_opts
// picks from every action that applies.
// Input: SINK of STAGE(root) or ASSIGN roots (from Kernelize).
// Output: SINK(SINK(step, ...), SINK(BUFFER of each root, ...)), steps in run order: each
// a kernel (a SINK of loop IR) or a copy.
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> Rangeify(const UOp& staged, const PassContext& ctx = {});

}  // namespace uopc
