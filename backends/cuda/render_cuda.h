// The CUDA renderer: a kernel as CUDA C++ that NVRTC compiles, with its output loops mapped
// to a grid of threads (passes/launch_dims.h: one thread per output element). The text is
// the C-style renderer's in its CUDA form (backends/c/render_c.h); the prelude needs no
// header, not even NVRTC's own: integer types are typedefs, f16 converts with PTX's cvt
// (round to nearest even; NaNs by bits, as core/float16.h), bf16 with the same bit
// arithmetic as the C backend.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/kernel_signature.h"
#include "core/uop.h"
#include "passes/launch_dims.h"

namespace uopc {

/// The helpers a translation unit of CUDA kernels starts with (once).
std::string CudaPrelude();
/// The same helpers for the CPU, after backends/cuda/cuda_on_cpu.h (which has the integer
/// types, NAN, and cvt.rn.f16.f32): the kernels' text then runs on backends/cuda/
/// cuda_emulator.h.
std::string CudaOnCpuPrelude();
/// The prelude's f16 NaN conversions, in plain C (PTX's cvt gives every NaN one canonical
/// pattern; these keep the bits core/float16.h defines): uopc_f16_nan_to_f32_bits(h) and
/// uopc_f32_nan_to_f16_bits(u), with UOPC_FN, uint16_t and uint32_t defined by the includer.
std::string HalfNanBits();

struct CudaKernel {
  std::string source;  // the kernel alone; a translation unit is CudaPrelude() + kernels
  LaunchDims dims;
};

/// `kernel` (a SINK of loop IR) verified, mapped to threads within `limits`, linearized and
/// rendered as `extern "C" __global__ void NAME(...)`.
absl::StatusOr<CudaKernel> RenderCudaKernel(const UOp& kernel, absl::string_view name,
                                            const LaunchLimits& limits);

}  // namespace uopc
