// Collectives as ops of the graph: lazy Tensor functions over the ranks of a ProcessGroup
// that autograd differentiates (a COLLECTIVE op, core/arg.h), run by the plan as a step
// between kernels, on the tensor's buffer where it lies. Megatron's pair for tensor
// parallelism is CopyToGroup (f) and ReduceFromGroup (g).
//
//   GraphGroup tp(*group);
//   Tensor h = CopyToGroup(tp, x).Matmul(w_shard);     // column-parallel
//   Tensor y = ReduceFromGroup(tp, h.Matmul(v_shard));  // row-parallel
#pragma once

#include "distributed/process_group.h"
#include "frontend/tensor.h"
#include "runtime/collective_group.h"

namespace uopc {

/// A ProcessGroup as plans name it: registered with the runtime while this lives. Every
/// rank of the group makes its collectives in the same order, as with the group's own.
class GraphGroup : public CollectiveGroup {
 public:
  explicit GraphGroup(ProcessGroup& group);
  ~GraphGroup() override;
  GraphGroup(const GraphGroup&) = delete;
  GraphGroup& operator=(const GraphGroup&) = delete;

  int rank() const override { return group_.rank(); }
  int size() const override { return group_.world_size(); }
  Wait Start(const CollectiveArg& c, const void* in, void* out, int64_t count,
             DType dtype) override;
  /// The group's number in this process (what its COLLECTIVE ops carry).
  int number() const { return number_; }
  /// The COLLECTIVE argument of `kind` over this group, whose gradient does `grad`.
  CollectiveArg Arg(CollectiveKind kind, CollectiveKind grad, Ops reduce = Ops::ADD) const;

 private:
  ProcessGroup& group_;
  int number_;
};

/// f: `x` as it is; its gradient is summed over the group (where a replicated value enters
/// rank-specific work).
Tensor CopyToGroup(const GraphGroup& g, const Tensor& x);
/// g: the sum of `x` over the group; its gradient passes as it is (where rank-specific work
/// is summed into a replicated value, counted once).
Tensor ReduceFromGroup(const GraphGroup& g, const Tensor& x);
/// The sum (or max) over the group, whose gradient is the sum of the ranks' gradients.
Tensor AllReduceOf(const GraphGroup& g, const Tensor& x, Ops reduce = Ops::ADD);
/// The ranks' values one after another along axis 0 (gradient: a reduce-scatter).
Tensor AllGatherOf(const GraphGroup& g, const Tensor& x);
/// This rank's part (along axis 0) of the sum over the group (gradient: an all-gather).
Tensor ReduceScatterOf(const GraphGroup& g, const Tensor& x);

}  // namespace uopc
