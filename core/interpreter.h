// The reference interpreter: runs a linearized kernel (the program passes/linearize
// produces) directly, with no compiler, using the same ALU semantics as constant folding
// (core/alu). It is the oracle every backend is compared against and a debugging aid: it
// refuses, with a clear error, what compiled code would silently get wrong (an index out
// of bounds, a VAR outside its declared bounds, a division by zero).
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

#include "core/uop.h"

namespace uopc {

/// Memory a kernel parameter is bound to: `count` elements of `dtype` at `data`.
struct BufferRef {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t count = 0;
};

/// Runs `program` with BUFFER slot k bound to buffers[k] and each VAR to vars[name].
absl::Status Interpret(absl::Span<const UOp> program, absl::Span<const BufferRef> buffers,
                       const absl::flat_hash_map<std::string, int64_t>& vars = {});

}  // namespace uopc
