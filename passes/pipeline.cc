#include "passes/pipeline.h"

#include "core/symbolic/simplify.h"
#include "passes/block_reduce.h"
#include "passes/copy_rules.h"
#include "passes/half_in_f32.h"
#include "passes/index_sums.h"
#include "passes/kernel_order.h"
#include "passes/kernelize.h"
#include "passes/launch_dims.h"
#include "passes/layout_copies.h"
#include "passes/number_loops.h"
#include "passes/rangeify.h"
#include "passes/reduce_collapse.h"
#include "passes/reduce_to_accumulators.h"
#include "passes/schedule_opts.h"
#include "passes/split_gated_loops.h"
#include "passes/split_reduces.h"
#include "passes/supplied_kernels.h"
#include "passes/thread_outer_loop.h"

namespace uopc {
namespace {

absl::StatusOr<UOp> SimplifyPass(const UOp& g, const PassContext&) { return Simplify(g); }

// The standard passes, in order.
const struct {
  const char* name;
  absl::StatusOr<UOp> (*fn)(const UOp&, const PassContext&);
} kPasses[] = {
    {"copy_rules", CopyRules},
    {"layout_copies", LayoutCopies},
    {"split_reduces", SplitReduces},
    {"kernelize", Kernelize},
    {"kernel_order", KernelOrder},
    {"rangeify", Rangeify},
    {"reduce_collapse", ReduceCollapse},
    {"supplied_kernels", SuppliedKernels},
    {"schedule_opts", ScheduleOpts},
    {"block_reduce", BlockReduce},  // (a GPU kernel's)
    {"reduce_to_accumulators", ReduceToAccumulators},
    {"half_in_f32", HalfInF32},
    {"simplify", SimplifyPass},
    {"split_gated_loops", SplitGatedLoops},  // (a CPU kernel's)
    {"number_loops", NumberLoops},
    // the target's own: a CPU kernel's outer loop to the cores, a GPU kernel's outputs to
    // blocks and threads (then the backend linearizes and renders)
    {"thread_outer_loop", ThreadOuterLoops},
    {"launch_dims", MapLaunchDims},
    {"index_sums", IndexSums},
};

bool RegisterOnce() {
  for (const auto& p : kPasses)
    PassRegistry::Get().Register(p.name, [p] { return MakePass(p.name, p.fn); });
  return true;
}

}  // namespace

PassManager LoweringPipeline() {
  static bool registered = RegisterOnce();
  (void)registered;
  PassManager pm;
  for (const auto& p : kPasses) pm.Add(MakePass(p.name, p.fn));
  return pm;
}

}  // namespace uopc
