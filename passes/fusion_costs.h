// The fusion costs that kernelize's realize map weighs (passes/kernelize.h): what is worth
// materializing once rather than computing again in each kernel that reads it, or for every
// element it is broadcast to. In one place of their own, named, so that a target's costs or
// a search can replace them. `staged` holds the nodes already materialized.
#pragma once

#include <cstddef>

#include "absl/container/flat_hash_set.h"

#include "core/uop.h"

namespace uopc {

/// A node that is a kernel of its own: a STAGE, or an in-place write (ASSIGN).
bool IsKernel(const UOp& u);

/// Whether `u` reads more than three buffers (materialized values) through no materialized
/// node: a residual stream that no kernel writes is the sum of every block's output.
bool ReadsManyBuffers(const UOp& u, const absl::flat_hash_set<const UOp::Node*>& staged);

/// How many kernels may compute `u` each before it is worth materializing once (SIZE_MAX:
/// any number).
size_t KernelsThatMayRepeat(const UOp& u, const absl::flat_hash_set<const UOp::Node*>& staged);

/// Whether recomputing `u` for every element it is broadcast to costs more than reading it
/// back.
bool Expensive(const UOp& u, const absl::flat_hash_set<const UOp::Node*>& staged);

}  // namespace uopc
