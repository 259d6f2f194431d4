// The whole-matmul kernels the CUDA plugin supplies (ABI 2.1's uopc_kernel_desc, op "matmul";
// core/matmul_call.h says what a call computes), which the host calls in place of its
// generated code (passes/supplied_kernels.h):
//  - cuda_sgemm: f32, on the CUDA cores: 128x128 (or, where those would leave multiprocessors
//    idle, 64x64) tiles of the output a block, 8x8 (4x4) a thread, staged through shared
//    memory in double-buffered slices of 8 along the sum, products fused (fma);
//  - cuda_mma_bf16_to_f32, cuda_mma_bf16_to_bf16, cuda_mma_f16_to_f32, cuda_mma_f16_to_f16
//    (sm_80 and later): half operands on the tensor cores (mma.sync m16n8k16, f32
//    accumulators), 128 x 256 tiles a block of 8 warps (or 128 x 128 where those would be
//    too few), slices of 32 along the sum copied with cp.async (16 bytes where aligned,
//    element by element at edges and where not) 3 or 4 stages ahead, fragments read with
//    ldmatrix. UOPC_CUDA_MMA_SHAPE=n256|n128 fixes the tiles, for measuring.
// Each has a variant per operand layout (a and b each row-major or transposed: the unit stride
// the call's params give), chosen at launch. The source (matmul_kernels.cu.inc) is one
// header-free translation unit, compiled with NVRTC once per architecture, and for the CPU
// by backends/cuda/emulated_matmul_kernels.h.
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
  uint32_t shared_bytes = 0;  // dynamic shared memory a block
};

/// The launch of kernel `name` for a checked call `p` on a GPU of `multiprocessors`, the
/// tensor-core kernels in shape `mma_shape` ("n256": 128 x 256 tiles, 3 stages of slices of
/// 32; "n128": 128 x 128, 4 stages), or "" to choose (n256 where it makes blocks enough to
/// fill the GPU twice); NotFound for a name it does not supply, InvalidArgument for a shape
/// it does not know, OutOfRange for more rows than a grid holds.
absl::StatusOr<MatmulLaunch> PlanMatmulLaunch(const std::string& name, const MatmulParams& p,
                                              int multiprocessors,
                                              const std::string& mma_shape = "");

}  // namespace uopc::cuda
