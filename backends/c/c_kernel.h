// A kernel as the C plugin renders it: with `dims`, its outermost output loop split over the
// cores where it has the work to be worth waking threads for (passes/thread_outer_loop.h),
// then linearized and rendered as C (backends/c/render_c.h). What the plugin's
// render_kernel returns, and what `uopc render` shows for a CPU target.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/kernel_signature.h"
#include "core/uop.h"

namespace uopc {

/// The C source of `kernel` (a SINK of loop IR) as function `name`; with `dims` (else
/// null: one thread), split over the cores and its launch dims set.
absl::StatusOr<std::string> RenderCKernel(const UOp& kernel, absl::string_view name,
                                          LaunchDims* dims);

}  // namespace uopc
