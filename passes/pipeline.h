// The lowering pipeline, as one flat list: copy_rules -> layout_copies (CPU targets) ->
// split_reduces (GPU targets) -> kernelize -> kernel_order -> rangeify -> reduce_collapse ->
// supplied_kernels -> schedule_opts -> reduce_to_accumulators -> simplify -> number_loops. Each is
// a pass of the PassManager (timed, verified, printable with UOPC_PRINT_AFTER) and is also
// registered by name, so an integrator can build a pipeline with passes of their own.
// (runtime/plan.h's Lower runs it and reads the plan off its output.)
#pragma once

#include "core/pass_manager.h"

namespace uopc {

/// A fresh pipeline of the standard passes.
PassManager LoweringPipeline();

}  // namespace uopc
