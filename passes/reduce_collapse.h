// ReduceCollapse: the rules that turn a loop-level sum into a load or a scatter, applied to
// each kernel of the lowered form (passes/lowered_steps.h) before its loops are scheduled.
// A sum over a loop r of a value that is 0 except where r equals an
// expression e that does not move with r is that value at r = e, or 0 when e lies outside
// the loop:   sum_{r < n} (e == r ? f(r) : 0)  =  (0 <= e < n) ? f(e) : 0.
// A one-hot times a table (Embedding, CrossEntropy's pick of the target) becomes one load
// at the index instead of a loop over the vocabulary (tinygrad's reduce-load collapse). A
// rule table first brings the comparison out to a WHERE around the whole value; the load
// at e is clamped into the loop's range, so that it stays in bounds when e does not.
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/pattern_matcher.h"
#include "core/uop.h"

namespace uopc {

/// The pass: on a CPU target, a kernel that sums into rows picked by an index (ScatterOf)
/// becomes rows of zeros (or of the base, for base + sum) and then each value added into
/// its row, in the reduction's order (its loops outermost, which no thread splits: two
/// steps may add into one row); one that sets rows picked by an index (Tensor::Scatter:
/// where(0 < hits, sum, base), hits the same one-hot's count) becomes the base and then
/// each value stored into its row. A base that is the output itself, in place, is not
/// copied. Then every loop-level REDUCE loses the loops that collapse (CollapseReduce).
absl::StatusOr<UOp> ReduceCollapse(const UOp& lowered, const PassContext& ctx = {});

/// The rules that move a one-hot's comparison out to a WHERE whose other value is 0:
/// cast(b) of a bool -> where(b, 1, 0); a cast, or a product, of where(c, x, 0) -> the
/// WHERE of the cast, or of the product.
const PatternMatcher& OneHotRules();

/// A reduction by `op` of `v` over `loops`, with the loops it collapses taken out of
/// `loops`: the value to reduce over the loops left (`v` itself, and `loops` unchanged,
/// where no loop collapses). A sum collapses a one-hot's loop (above); a max, an and or an
/// or (f(x, x) == x) drops every loop of at least one step that `v` does not move with (an
/// index check's largest of an index broadcast over the rows it picks).
UOp CollapseReduce(Ops op, const UOp& v, std::vector<UOp>& loops);

/// A sum that lands in rows picked by an index (the gradient of an embedding: row k of
/// the table gets the sum of the gradients of the tokens whose index is k): a value
/// where(e == k, f, 0) for an output loop k and an index e that does not move with k.
struct ScatterRow {
  UOp loop;    // k
  UOp index;   // e, clamped into k's range
  UOp value;   // what is added at row e: f at k = e, 0 where e lies outside k's range
  UOp valid;   // whether e lies in k's range
  UOp picked;  // f at k = e (clamped)
};
/// The scatter that a sum of `v` over its reduction loops is, where it is one; `outputs`
/// are the kernel's output loops.
std::optional<ScatterRow> ScatterOf(const UOp& v, const std::vector<UOp>& outputs);

}  // namespace uopc
