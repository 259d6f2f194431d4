// The runtime behind Tensor::Realize: lowers the graph of the tensors to realize through
// the plan cache (building a plan with the lowering pipeline the first time a structure
// is seen), allocates outputs and temporaries, and runs the plan's kernels on the device.
// UOPC_DEBUG=1 prints one line per plan built; UOPC_DEBUG=2 also prints each kernel's
// source when it is first compiled and every kernel's run time.
#pragma once

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

#include "devices/kernel_cache.h"
#include "frontend/tensor.h"
#include "passes/plan_cache.h"

namespace uopc {

class Runtime {
 public:
  static Runtime& Get();

  /// Realizes every unrealized tensor of `targets` (on one device) with one plan.
  absl::Status Realize(const std::vector<std::shared_ptr<LazyData>>& targets);
  /// The plan that realizing `targets` would run (built or from the cache), without running it.
  absl::StatusOr<std::shared_ptr<const Plan>> PlanFor(
      const std::vector<std::shared_ptr<LazyData>>& targets);

  PlanCache& plans() { return plans_; }
  KernelCache& KernelsFor(Device* device);
  /// A fresh id for a BUFFER node.
  static int NewBufferId();

 private:
  PlanCache plans_;
  absl::flat_hash_map<Device*, std::unique_ptr<KernelCache>> executors_;
  absl::flat_hash_map<UOp, bool> shown_;  // kernels whose source was printed
  int debug_ = 0;
  Runtime();
};

}  // namespace uopc
