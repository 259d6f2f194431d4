// The target of a CUDA GPU: from the driver's attributes where the GPU is present, and from
// a fixed table for an architecture named without its GPU ("sm_90"), so that kernels can be
// lowered and rendered for a GPU on any machine. The table holds each architecture's
// figures as its flagship data-center part has them (sm_90: H100/H200 SXM, 132
// multiprocessors, 50 MiB L2, 227 KiB of shared memory a block) and its tensor cores'
// mma.sync shapes; a present GPU's own attributes replace the figures, never the shapes.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/target.h"

namespace uopc {

/// What the driver reports of one GPU (cuDeviceGetAttribute).
struct GpuAttributes {
  int arch = 0;  // compute capability x 10
  int multiprocessors = 0, warp = 0, threads_per_block = 0;
  int64_t l2_bytes = 0, shared_per_block = 0;  // (shared: the opt-in maximum)
};

/// The target of architecture `arch` ("sm_90", or "90"); InvalidArgument lists the known.
absl::StatusOr<Target> NamedGpuTarget(absl::string_view arch);

/// A present GPU's target: its architecture's, with the driver's figures (those it reports
/// as 0 keep the table's).
Target GpuTarget(const GpuAttributes& a);

}  // namespace uopc
