// The lowering pipeline, as one flat list: kernelize -> rangeify -> simplify. Each is a
// pass of the PassManager (timed, verified, printable with UOPC_PRINT_AFTER) and is also
// registered by name, so an integrator can build a pipeline with passes of their own.
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "passes/plan.h"

namespace uopc {

/// A fresh pipeline of the standard passes.
PassManager LoweringPipeline();
/// Lowers a canonical tensor SINK (inputs numbered 0..num_inputs-1) to a plan.
absl::StatusOr<Plan> Lower(const UOp& canonical_sink, int num_inputs, PassManager& pipeline);

}  // namespace uopc
