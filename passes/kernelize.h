// Kernelize: decides where a tensor graph is split into kernels, by wrapping the nodes
// that must be materialized in STAGE, each on the device that computes it (core/placement:
// a value is computed where its inputs are; one made of constants alone, where its users
// are). Everything between STAGEs is fused into one kernel: elementwise chains into each
// other and into the REDUCE that consumes them. Materialized:
//   - every root of the graph (the tensors being realized; a root the caller wrapped in
//     STAGE[device] stays on that device);
//   - every COPY, on its target, and what it copies, on its source (unless that is a buffer
//     already: a COPY of a reshaped buffer is the reshape of the buffer's copy; a COPY of a
//     constant, or to where the value is, is no copy at all);
//   - every REDUCE whose result is broadcast back (reaches a consumer through an EXPAND
//     before the next STAGE): recomputing it per broadcast element would repeat the
//     whole reduction (a row softmax: max, then sum, then the output: three kernels);
//   - every costly computation broadcast into a REDUCE (under an EXPAND inside the
//     reduction: a matmul's operand would be recomputed once per column of the other);
//   - every REDUCE that more than one kernel reads (each would repeat it);
//   - the value of an in-place write, ASSIGN(view of a BUFFER, value), that reads the buffer
//     it writes: computed whole before it is written (else a kernel could read what it has
//     overwritten). The ASSIGN is a kernel of its own, that stores into the view; a read of
//     the buffer after the write is AFTER(view, ASSIGN) (rangeify orders the kernels).
// A staged f32 widening of a half stages the half instead (its readers widen it as they
// load: the same values in half the bytes), as a staged sum that is rounded to a half stages
// the rounding. A value made of constants alone that users on two devices share is recomputed by
// each, never staged. What is worth materializing is weighed by passes/fusion_costs.h. Input: SINK
// of tensor-level roots, after copy_rules (and layout_copies). Output: SINK of STAGE(root)
// (a root that is a write, or a chain of writes AFTER(...), stays as it is), with inner
// STAGEs.
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> Kernelize(const UOp& sink, const PassContext& ctx = {});

}  // namespace uopc
