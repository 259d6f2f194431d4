// SplitGatedLoops: a CPU kernel whose innermost loop is cut by constant gates (r < c, the
// pieces of a concatenation or a pad's edges) runs that loop as one loop per piece, each
// computing only its piece, where the gates fold away; a piece whose index is divided by a
// constant that divides its length (r / d and r % d: a head's columns of a (batch, time,
// heads x head dim) gradient) runs as two loops, the inner one contiguous. gcc vectorizes
// neither the gated loop nor a divided index: a bf16 GPT's q, k and v gradients joined into
// one took 1.6 ms for 393,216 elements on an Intel Xeon with AVX-512. Values are unchanged:
// each element is computed by the same expression, with the gates that hold for it.
// Input and output: the lowered form (SINK of steps); copies pass through. Where the kernel
// is not one store in its loops, or nothing cuts its innermost loop, it comes back as it was.
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> SplitGatedLoops(const UOp& lowered, const PassContext& ctx = {});

/// One kernel (a SINK of loop IR) with its innermost loop split at its gates.
UOp SplitGatedLoop(const UOp& kernel);

}  // namespace uopc
