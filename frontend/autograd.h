// Autograd: reverse-mode differentiation of tensor graphs. Gradients are themselves lazy
// tensor graphs, lowered and cached like any other (so after the first training step,
// later steps compile nothing). Every differentiable tensor-level op has a rule here:
// elementwise arithmetic, WHERE, casts between floats, the movement ops, and REDUCE (sum
// and max). Comparisons and integer results carry no gradient. A value that depends on a
// data-dependent index (a gather) is refused with a clear error.
#pragma once

#include <vector>

#include "frontend/tensor.h"

namespace uopc {

/// d(loss)/d(w) for each of `wrt` (a scalar float loss); a tensor of zeros where the loss
/// does not depend on one.
std::vector<Tensor> Gradients(const Tensor& loss, const std::vector<Tensor>& wrt);

}  // namespace uopc
