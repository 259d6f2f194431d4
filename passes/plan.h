// Plan: what running a tensor graph takes: the buffers (inputs, outputs, temporaries) and
// the kernels in order, each with its own buffer slots (0, 1, ...) mapped to plan
// buffers. Kernels are renumbered so that the same computation is the same kernel node in
// every plan (and compiles once).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "core/uop.h"

namespace uopc {

struct Plan {
  enum class Role { kInput, kOutput, kTemp };
  struct BufferSpec {
    DType dtype;
    int64_t count;
    Role role;
  };
  struct Kernel {
    UOp ast;                   // a SINK of loop IR, BUFFER slots 0..n-1
    std::vector<int> buffers;  // kernel slot -> plan buffer
  };
  std::vector<BufferSpec> buffers;  // inputs first (in canonical order), then the rest
  std::vector<Kernel> kernels;      // in run order
  std::vector<int> outputs;         // plan buffer of each root
  int num_inputs = 0;
};

/// The plan of a lowered graph (Rangeify's output, after any later passes).
absl::StatusOr<Plan> ExtractPlan(const UOp& lowered, int num_inputs);

}  // namespace uopc
