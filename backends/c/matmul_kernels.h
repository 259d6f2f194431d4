// The whole-matmul kernels the C plugin supplies (ABI 2.1's uopc_kernel_desc), which the
// host calls in place of its generated code (passes/supplied_kernels.h, core/matmul_call.h):
//  - amx_bf16_to_f32, amx_bf16_to_bf16: bf16 x bf16 -> f32 or bf16 on AMX tiles, where CPUID says
//  the CPU has
//    AMX-BF16 and the OS lets the process use the tiles (arch_prctl). On by default there;
//    UOPC_C_AMX=0 turns it off.
//  - avx2_sgemm: f32 on AVX2 and FMA, blocked and packed (backends/c/avx2_sgemm.h), the same
//    bits as the generated kernels; avx2_bf16_to_f32 and avx2_bf16_to_bf16 the same for bf16
//    operands where there is no AMX; on by default where the CPU has no AVX-512 (and
//    UOPC_C_BLAS is not openblas).
//    UOPC_C_SGEMM=none turns it off, =avx2 on wherever the CPU has AVX2 and FMA. They keep a
//    b they multiply unchanged packed, up to UOPC_C_PACK_CACHE_MB (backends/c/packed_b_cache.h).
//  - openblas_sgemm: f32 through OpenBLAS's cblas_sgemm, the library opened with dlopen
//    (libopenblas.so.0). Off by default; UOPC_C_BLAS=openblas turns it on (an error at
//    initialize, naming the library, when it cannot be opened).
// Which ones there are is decided once, at initialize, from the CPU this runs on and the
// options, never from the machine that built the plugin.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

#include "backends/c/packed_b_cache.h"
#include "backends/plugin_api.h"
#include "core/matmul_call.h"
#include "core/target.h"

namespace uopc::cpu {

/// Decides the kernels from the plugin's options ("amx": 0 or 1, "blas": "openblas" or
/// "none", "sgemm": "auto", "avx2" or "none", "pack_cache_mb": the MiB of packed operands
/// kept); InvalidArgument for a value it does not know, Unavailable for a library it cannot
/// open. Only the first call decides.
absl::Status ConfigureMatmulKernels(absl::Span<const std::pair<std::string, std::string>> options);
/// The kernels decided (empty before ConfigureMatmulKernels), as the target lists them.
absl::Span<const SuppliedKernel> MatmulKernels();
/// The kernel named `name`, or null.
const SuppliedKernel* FindMatmulKernel(const char* name);
/// The kernels an emulated GPU (EMU:0 of `arch`, "sm_90") supplies: those of that GPU's
/// plugin (backends/cuda/matmul_kernels.h; none with UOPC_CUDA_KERNELS=0), so that it gets
/// the GPU's lowering; they run as that GPU runs them, their CUDA source on the CPU
/// (backends/cuda/emulated_matmul_kernels.h).
std::vector<SuppliedKernel> EmulatedGpuKernels(absl::string_view arch);
/// Runs kernel `name` on these operands (each at its element 0), on the CPU threads of
/// backends/c/thread_pool.h. The caller has checked the params against the buffers
/// (core/matmul_call.h's CheckMatmul); the dtypes are the kernel's. `b_version` names b's
/// content, so that a kernel may keep b packed for later calls (backends/c/packed_b_cache.h);
/// its default keeps nothing.
absl::Status RunMatmulKernel(const char* name, const MatmulParams& p, void* out, const void* a,
                             const void* b, BufferVersion b_version = {});

}  // namespace uopc::cpu
