// A kernel's graph from its form (backends/kernel_form.h): what uopc's own backends render
// from, so that the form is all they need, as it is all a plugin outside uopc gets. The
// graph is the one the form was read from, node for node (the interner gives the same
// nodes).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

#include "backends/kernel_form.h"
#include "core/uop.h"

namespace uopc {

/// The graph of `form`: its last node, the SINK.
absl::StatusOr<UOp> GraphOfForm(const uopc_kernel_form& form);

/// The graph of a kernel as render receives it (uopc_render_args.kernel), through its form.
absl::StatusOr<UOp> ReadKernel(const void* kernel, uint64_t size);

}  // namespace uopc
