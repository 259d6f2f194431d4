#include "backends/cuda/emulated_matmul_kernels.h"

#include <array>

#include "absl/strings/str_cat.h"

#include "backends/cuda/cuda_on_cpu.h"
#include "backends/cuda/matmul_kernels.h"
#include "core/status_macros.h"

namespace uopc::cuda {
namespace {
#include "backends/cuda/matmul_kernels.cu.inc"
}  // namespace

absl::Status RunEmulatedMatmul(const std::string& name, const MatmulParams& p, int multiprocessors,
                               void* out, const void* a, const void* b,
                               const emu::ParallelFor& parallel, const std::string& mma_shape) {
  ASSIGN_OR_RETURN(const MatmulLaunch l, PlanMatmulLaunch(name, p, multiprocessors, mma_shape));
  const emu::KernelBody body = emu::FindKernel(l.entry);
  if (!body)
    return absl::InternalError(absl::StrCat("cuda: no CPU build of kernel '", l.entry, "'"));
  std::array<int64_t, MatmulParams::kCount> values = p.Values();  // (the kernels' Mm)
  void* ptrs[3] = {out, const_cast<void*>(a), const_cast<void*>(b)};
  void* params[] = {&ptrs[0], &ptrs[1], &ptrs[2], values.data()};
  return emu::Launch(l.entry, body, {l.grid[0], l.grid[1], l.grid[2]},
                     {l.block[0], l.block[1], l.block[2]}, l.shared_bytes, params, parallel);
}

}  // namespace uopc::cuda
