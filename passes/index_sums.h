// IndexSums: each integer sum that indexes memory is reassociated outermost loop first,
// ((terms of no loop + terms of the outer loops) + ...) + terms of the innermost loop, and
// then the deepest loop that steps it by one (a bare RANGE) moved to the end, so that each partial
// sum is placed in the outermost loop it can be (the linearizer hoists it) and an inner loop's
// index is a base plus its own terms. gcc proves consecutive elements contiguous under -fwrapv only
// in that form: data[(a + (b + j))], j the inner loop, was read a float at a time (16 inserts into
// a vector), data[((a + b) + j)] as one vector load (a weight gradient's kernel: 16.5 -> 20 GFLOP/s
// on an AMD EPYC, AVX2). Integer + wraps, so the value is the same in any order. Input and output:
// the lowered form (SINK of steps); copies pass through.
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> IndexSums(const UOp& lowered, const PassContext& ctx = {});

/// One kernel (a SINK of loop IR) with its index sums in loop order.
UOp OrderIndexSums(const UOp& kernel);

}  // namespace uopc
