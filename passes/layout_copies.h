// LayoutCopies: for a CPU target, the sums whose operands lie in memory the wrong way for
// its caches read a copy laid out the right way (a small kernel of its own), with the same
// sums in the same order, so values do not change:
//   - a matrix whose rows a sum reads along their contiguous elements while the output runs
//     across the rows (dY @ W^T): a transposed copy, so the output's loop runs along
//     contiguous memory and gets a row of sums;
//   - x @ W^T with W stored as (n, k) (a head in PyTorch's layout, or tied to an embedding):
//     a transposed copy of W;
//   - a matmul's b whose rows lie a multiple of the target's L1 set stride apart (size over
//     ways): a copy with rows 16 elements longer, so its column blocks do not fall in few
//     cache sets;
//   - a sum over the leading axes (a weight's gradient over a batch's tokens) of an operand
//     whose rows lie 2 KiB or more apart, read across them: a copy packed in panels of the
//     register tile's rows (or columns) that the CPU's heuristics give the sum, as a BLAS
//     packs its operands.
//   - a matmul that a supplied kernel takes, reading an operand that a reshape flattens from
//     a transposed view (an attention's heads as (B, T, H * D)): a copy in the view's
//     order, which has strides (BLAS layouts are strided; the values are the same);
//   - a matmul that a supplied kernel takes, reading a linear layer's f32 output plus its
//     bias through views (an attention's q . k^T and att @ v): the sum and the biased value
//     staged, so that the matmul reads memory instead of adding the bias in its loops.
// A sum on a GPU target is left as it is (its threads read across rows). Input and output:
// a SINK of tensor-level roots (before kernelize).
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> LayoutCopies(const UOp& sink, const PassContext& ctx = {});

}  // namespace uopc
