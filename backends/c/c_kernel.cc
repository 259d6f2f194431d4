#include "backends/c/c_kernel.h"

#include <vector>

#include "backends/c/render_c.h"
#include "core/status_macros.h"
#include "passes/linearize.h"
#include "passes/thread_outer_loop.h"

namespace uopc {

absl::StatusOr<std::string> RenderCKernel(const UOp& kernel, absl::string_view name,
                                          LaunchDims* dims) {
  UOp k = kernel;
  if (dims) {
    ASSIGN_OR_RETURN(k, ThreadOuterLoop(kernel, dims, kMinThreadedWork));
  }
  ASSIGN_OR_RETURN(std::vector<UOp> program, Linearize(k));
  return RenderC(program, name);
}

}  // namespace uopc
