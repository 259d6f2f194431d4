// The verifier: dtype and shape inference for every op, and a clear error for a graph
// that breaks the IR's rules (wrong number of sources, wrong argument, mismatched dtypes,
// a RESHAPE that changes the number of elements, an axis out of range, a division by the
// constant 0, ...). The message names the op, the operands' dtypes and shapes, and what was
// expected. Tensor-level ops have shapes; loop-level nodes are scalars, shape ().
#pragma once

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "core/shape.h"
#include "core/uop.h"

namespace uopc {

/// OK if every node reachable from `root` is well formed; else InvalidArgument naming
/// the first bad node (sources before users).
absl::Status Verify(const UOp& root);
/// The shape of `root`, verifying the graph on the way.
absl::StatusOr<Shape> InferShape(const UOp& root);
/// The shapes of every node reachable from `root` (valid while `root` lives).
using ShapeMap = absl::flat_hash_map<const UOp::Node*, Shape>;
absl::StatusOr<ShapeMap> InferShapes(const UOp& root);

}  // namespace uopc
