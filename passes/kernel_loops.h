// A kernel as the optimization heuristics see it: the lengths of its loops and whether it
// is a plain matmul (schedule_opts reads it off the kernel's loop IR), and the splits a list of
// actions asks of those loops. Every target class's heuristics (passes/cpu_opts.h,
// passes/gpu_opts.h) and their dispatch (passes/opts.h) work on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/opt.h"

namespace uopc {

/// A kernel as the opts see it.
struct KernelLoops {
  std::vector<std::optional<int64_t>> outputs;    // output loops' lengths (nullopt: symbolic)
  std::vector<std::optional<int64_t>> reduction;  // its first reduction's loops' lengths
  bool reduces = false;                           // it computes a reduction
  bool matmul = false;  // each reduction a sum of products of two values read from buffers
  // a read of its sums steps through memory along the reduction (by 1 along its last loop)
  // and across rows along the last output loop: a layer norm's or a softmax's row sums
  bool sums_rows = false;
  std::string shape;    // its output shape, for messages: "(48, 96)"
};

/// How a list of actions splits a kernel's last two output loops (rows, then columns) and
/// its reduction loops.
struct LoopSplits {
  bool registers = false;         // upcast (in registers), else group (on the stack)
  int64_t rows = 0, columns = 0;  // tile sizes; 0: that loop is not split
  std::vector<Opt> unrolls;       // the unroll actions
};

/// The unrolls of `k`'s reduction loops by 4 and 8 (where they divide them), every target's.
std::vector<Opt> UnrollActions(const KernelLoops& k);

}  // namespace uopc
