// Data parallelism inside the step's plan, in buckets as DDP's: the gradients, taken in the
// reverse of the parameters' order (the order the backward pass makes them), are written
// into f32 buckets of about `bucket_bytes`, and each bucket is all-reduced by a step of the
// plan that next reads the gradients (the optimizer's), which starts as soon as the bucket's
// gradients are computed and runs while the rest of the backward pass does. One plan a step,
// as in one process.
#pragma once

#include <cstdint>
#include <vector>

#include "distributed/graph_collectives.h"

namespace uopc {

/// Replaces the gradient of every parameter that has one by its average over the ranks of
/// `g` (lazily). Every rank must pass the same parameters, with gradients in the same places.
void AverageGradientsInPlan(const GraphGroup& g, const std::vector<Tensor*>& params,
                            int64_t bucket_bytes);

}  // namespace uopc
