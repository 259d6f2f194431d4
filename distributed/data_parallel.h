// Data parallelism inside the step's plan, in buckets as DDP's: the gradients, taken in the
// reverse of the parameters' order (the order the backward pass makes them), are written
// into buckets of about `bucket_bytes`, and each bucket is all-reduced by a step of the
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
/// The buckets hold `wire`: f32, or under mixed precision the half (bf16 or f16), which
/// halves the bytes sent; each rank's share is then divided by the ranks first (so an f16
/// sum of loss-scaled gradients overflows only where the average would), the sums are
/// accumulated in f32, and the average is widened back to the gradient's dtype.
void AverageGradientsInPlan(const GraphGroup& g, const std::vector<Tensor*>& params,
                            int64_t bucket_bytes, DType wire = DType::kF32);

}  // namespace uopc
