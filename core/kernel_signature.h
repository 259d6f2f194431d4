// The parameters of a kernel, in the order every backend takes them at launch: one
// buffer per BUFFER slot (bufs[slot]; slots not used by the kernel are null), then the
// kernel's VARs sorted by name, each passed as a 64-bit integer. The host and every plugin
// derive it the same way from the kernel graph, so nothing else needs to travel.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "core/uop.h"

namespace uopc {

struct KernelSignature {
  struct Buffer {
    bool used = false;
    DType dtype = DType::kVoid;
    int64_t size = 0;      // elements
    bool written = false;  // a STORE's (or, for a store whose address is not an INDEX of a
                           // BUFFER, every buffer its address reads: what it may write)
  };
  std::vector<Buffer> buffers;  // index: slot
  std::vector<VarArg> vars;     // sorted by name
};

/// How many instances of a kernel run: a grid of `global` blocks of `local` threads each
/// (CUDA's grid and block). A kernel whose loops are all inside runs once: {1,1,1}, {1,1,1}.
struct LaunchDims {
  std::array<uint32_t, 3> global{1, 1, 1};
  std::array<uint32_t, 3> local{1, 1, 1};
  bool operator==(const LaunchDims&) const = default;
};

/// The dims a kernel's GLOBAL and LOCAL ranges were made for (passes/launch_dims.h,
/// passes/thread_outer_loop.h): a range's largest length, as its end's bound says (a block
/// of run-time length is as large as its largest). {1,1,1} twice for a kernel without them.
LaunchDims LaunchDimsOf(const UOp& sink);

/// The value of an index expression (CONSTs, VARs and integer ALU ops) with VARs set by
/// name; nullopt for a VAR without a value, another op, or an undefined value (a division
/// by zero). What a launch computes its grid from when the grid's size is a VAR's.
std::optional<int64_t> EvalIndex(const UOp& expr,
                                 const absl::flat_hash_map<std::string, int64_t>& vars);

/// The signature of the kernel rooted at `sink`. An error if one slot is declared twice
/// with different dtypes or sizes, or one VAR name with different bounds.
absl::StatusOr<KernelSignature> SignatureOf(const UOp& sink);

}  // namespace uopc
