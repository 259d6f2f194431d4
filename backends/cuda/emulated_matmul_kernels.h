// The CUDA plugin's supplied matmuls (backends/cuda/matmul_kernels.h) run on the CPU: their
// very source, compiled after backends/cuda/cuda_on_cpu.h, launched as the CUDA plugin
// launches them on a GPU (the same variant, grid and shared memory) on
// backends/cuda/cuda_emulator.h. EMU:0 (the C plugin emulating a GPU) runs its supplied
// kernels this way, so the conformance suite checks the GPU's matmul kernels, tensor-core
// fragments included, on any machine.
#pragma once

#include <string>

#include "absl/status/status.h"

#include "backends/cuda/cuda_emulator.h"
#include "core/matmul_call.h"

namespace uopc::cuda {

/// Runs supplied kernel `name` ("cuda_sgemm", "cuda_mma_bf16_to_f32", ...) for a checked
/// call `p` as a GPU of `multiprocessors` would (PlanMatmulLaunch, with `mma_shape`), its
/// blocks over `parallel`. The planner's and the emulator's errors (a kernel that breaks a
/// rule of the hardware: FailedPrecondition naming the block and thread).
absl::Status RunEmulatedMatmul(const std::string& name, const MatmulParams& p, int multiprocessors,
                               void* out, const void* a, const void* b,
                               const emu::ParallelFor& parallel = nullptr,
                               const std::string& mma_shape = "");

}  // namespace uopc::cuda
