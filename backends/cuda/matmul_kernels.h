// The whole-matmul kernels the CUDA plugin supplies (ABI 2.1's uopc_kernel_desc, op "matmul";
// core/matmul_call.h says what a call computes), which the host calls in place of its
// generated code (passes/supplied_kernels.h):
//  - cuda_sgemm: f32, on the CUDA cores: 128x128 (or, where those would leave multiprocessors
//    idle, 64x64) tiles of the output a block, 8x8 (4x4) a thread, staged through shared
//    memory in double-buffered slices of 8 along the sum, products fused (fma);
//  - cuda_mma_bf16_to_f32, cuda_mma_bf16_to_bf16 (sm_80 and later): bf16 operands on the tensor
//    cores (mma.sync m16n8k16, f32 accumulators), 128x128 tiles a block of 8 warps, slices of
//    32 copied with cp.async (16 bytes where aligned, element by element at edges and where
//    not), fragments read with ldmatrix.
// Each has a variant per operand layout (a and b each row-major or transposed: the unit stride
// the call's params give), chosen at launch. The source is one header-free translation unit,
// compiled with NVRTC once per architecture.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "core/matmul_call.h"
#include "core/target.h"

namespace uopc::cuda {

/// The kernels supplied on a GPU of compute capability `arch` (x 10).
std::vector<SuppliedKernel> MatmulKernels(int arch);

/// The source of every variant (MatmulEntries()).
const std::string& MatmulKernelsSource();
/// The variants' function names, in the source.
std::vector<std::string> MatmulEntries();

/// One launch of a supplied kernel: which variant, and its grid (blocks) and block (threads).
struct MatmulLaunch {
  std::string entry;
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
};

/// The launch of kernel `name` for a checked call `p` on a GPU of `multiprocessors`;
/// NotFound for a name it does not supply.
absl::StatusOr<MatmulLaunch> PlanMatmulLaunch(const std::string& name, const MatmulParams& p,
                                              int multiprocessors);

}  // namespace uopc::cuda
