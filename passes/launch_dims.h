// MapToLaunchDims: gives a kernel's output elements to a grid of threads. The loops that
// enclose a kernel's one store group (its output loops) become one index over all their
// elements, split into global ranges (blocks) of local ranges (threads in a block); each
// thread computes one output element, reductions staying inside it (one thread per
// output). The block size is the largest divisor of the element count within the limit,
// so no thread falls past the end and none needs a guard. Output loops of run-time length
// (a VAR's) get blocks of the largest block size, as many as the run-time length needs: a
// global range whose end is an expression of the VARs, which a launch evaluates (its
// largest value is the dims' grid); threads past the run-time end do nothing, and one
// kernel serves every length. A kernel it cannot map (more than one store
// group, nothing to split) comes back as it was, launched once; one mapped already comes
// back as it was, with the dims it was mapped to (LaunchDimsOf). The pipeline's last pass
// for a GPU target (MapLaunchDims); a backend older than ABI 1.5 runs it itself.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "core/kernel_signature.h"
#include "core/pass_manager.h"
#include "core/target.h"
#include "core/uop.h"

namespace uopc {

struct LaunchLimits {
  uint32_t max_local = 256;          // threads in a block
  uint64_t max_global = 2147483647;  // blocks (CUDA's grid.x)

  /// A GPU target's: blocks of 256 threads (at most the target's), so that several blocks
  /// share a multiprocessor; CUDA's grid.x.
  static LaunchLimits For(const Target& t);
};

/// The largest divisor of n that is at most `limit` (1 for none above 1).
int64_t LargestDivisor(int64_t n, int64_t limit);

/// Each of `loops` (RANGEs of constant length, outermost first) as its index in `flat`, an
/// index over all their elements: (flat // stride) % length, into `at` by loop.
void LoopIndices(const std::vector<UOp>& loops, const UOp& flat,
                 absl::flat_hash_map<const UOp::Node*, UOp>& at);

/// `kernel` (a SINK of loop IR) with its output loops mapped to global and local ranges,
/// and in `dims` how many of each to launch ({1,1,1} both when nothing was mapped).
absl::StatusOr<UOp> MapToLaunchDims(const UOp& kernel, const LaunchLimits& limits,
                                    LaunchDims* dims);

/// The pass: every kernel of a GPU target whose backend takes its launch mapped
/// (PassContext::MapsLaunch) mapped within LaunchLimits::For its target.
absl::StatusOr<UOp> MapLaunchDims(const UOp& lowered, const PassContext& ctx = {});

}  // namespace uopc
