// Opts: the kernel optimizations' heuristics and search space, apart from the loops they
// shape (rangeify applies them as it builds a kernel; runtime/kernel_search.h searches them).
// A kernel is to them the lengths of its loops and whether it is a plain matmul:
//   - DefaultOpts: a matmul's register tile (the first of 8x48, 6x64, 8x32, 4x64, 4x48, 4x32
//     that divides its last two output loops), else a reducing kernel's sums in a row of up
//     to 512 on the stack, in groups of 4 rows;
//   - OptActions: every single action (core/opt.h) the search may try on it;
//   - SplitsOf: what a list of actions asks of its loops, checked (InvalidArgument names the
//     action, the kernel's shape and what was expected).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "core/opt.h"

namespace uopc {

/// A kernel as the opts see it.
struct KernelLoops {
  std::vector<std::optional<int64_t>> outputs;    // output loops' lengths (nullopt: symbolic)
  std::vector<std::optional<int64_t>> reduction;  // its first reduction's loops' lengths
  bool reduces = false;                           // it computes a reduction
  bool matmul = false;  // each reduction a sum of products of two values read from buffers
  std::string shape;    // its output shape, for messages: "(48, 96)"
};

/// The default heuristics' actions for `k` (none for a kernel without a reduction).
std::vector<Opt> DefaultOpts(const KernelLoops& k);

/// Every single action that applies to `k`, for a search (none without a reduction).
std::vector<Opt> OptActions(const KernelLoops& k);

/// How a list of actions splits a kernel's last two output loops (rows, then columns) and
/// its reduction loops.
struct LoopSplits {
  bool registers = false;         // upcast (in registers), else group (on the stack)
  int64_t rows = 0, columns = 0;  // tile sizes; 0: that loop is not split
  std::vector<Opt> unrolls;       // the unroll actions
};

/// The splits `opts` ask of `k`; InvalidArgument if one does not apply.
absl::StatusOr<LoopSplits> SplitsOf(const KernelLoops& k, const std::vector<Opt>& opts);

}  // namespace uopc
