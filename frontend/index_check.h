// IndexCheck: the bounds of an index tensor (of Gather, IndexSelect, ScatterAdd, Scatter),
// checked when the plan that reads it runs. The kernels never touch memory at an index
// outside its dim (the load or store there is guarded); the plan also computes the index's
// largest value read as unsigned (so a negative index is larger than any other), and
// Realize (and every run of a captured step) compares it with the dim's size at that run:
// OUT_OF_RANGE naming the op, the dim, the tensor and the bad index.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include "devices/buffer.h"
#include "frontend/sym_int.h"

namespace uopc {

struct LazyData;

struct IndexCheck {
  std::shared_ptr<LazyData> largest;  // 0-d: the index's largest value, its dtype made unsigned
  SymInt size;                        // the dim's size: an index lies in [0, size)
  bool signed_index = true;           // whether the index's dtype is signed (i32, i64)
  std::string what;                   // the op and what it indexes: "gather: dim 1 of f32 (4, 65)"
};

/// One run's checks: `largest[i]` (the 1-element buffer a plan computed for `checks[i]`) below
/// `sizes[i]` (the dim's size in that run). The values are copied out all at once (one wait,
/// not one round trip a check, which a remote device would feel); a buffer on another rank's
/// device is that rank's to check. The first that fails is OUT_OF_RANGE: "<what>: an index of
/// -1, outside [0, 65)".
absl::Status CheckIndexBounds(const std::vector<const IndexCheck*>& checks,
                              const std::vector<Buffer>& largest,
                              const std::vector<int64_t>& sizes);

}  // namespace uopc
