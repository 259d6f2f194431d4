// Linearize: orders a kernel's loop-IR graph into a program, the list a renderer or the
// interpreter walks. Every node appears once, after its sources. A RANGE opens a loop; the
// END that closes it comes after everything inside. A node sits in the innermost loop its
// sources need and no deeper: the scope of a RANGE is the scope of its end plus itself, so
// loop-invariant work (the load of a trip count, `i*8` in an inner loop) is hoisted.
// Memory order is the graph's: a load that must follow a loop's stores depends on the
// loop's END through AFTER.
#pragma once

#include <vector>

#include "absl/status/statusor.h"

#include "core/uop.h"

namespace uopc {

/// The program of kernel `sink` (a SINK of statements), or an error naming a node that
/// uses a loop outside of it or a RANGE no END closes.
absl::StatusOr<std::vector<UOp>> Linearize(const UOp& sink);

}  // namespace uopc
