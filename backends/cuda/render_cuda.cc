#include "backends/cuda/render_cuda.h"

#include "backends/c/render_c.h"
#include "core/status_macros.h"
#include "core/verify.h"
#include "passes/linearize.h"

namespace uopc {

std::string HalfNanBits() {
  return R"CU(UOPC_FN uint32_t uopc_f16_nan_to_f32_bits(uint16_t h) {  /* its payload kept */
  return ((uint32_t)(h & 0x8000u) << 16) | 0x7f800000u | ((uint32_t)(h & 0x3ffu) << 13);
}
UOPC_FN uint16_t uopc_f32_nan_to_f16_bits(uint32_t u) {  /* quiet, its top payload bits kept */
  return (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu));
}
)CU";
}

namespace {

// what both preludes define after their f16 conversions
constexpr char kPreludeTail[] =
    R"CU(UOPC_FN float uopc_rf16(float f) { return uopc_f16_to_f32(uopc_f32_to_f16(f)); }
template <typename To, typename From>
UOPC_FN To uopc_bits(From x) {
  union { From a; To b; } u;
  u.a = x;
  return u.b;
}
)CU";

}  // namespace

std::string CudaPrelude() {
  return R"CU(typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#define NAN __int_as_float(0x7fc00000)
#define INFINITY __int_as_float(0x7f800000)
#define UOPC_FN static __device__ __forceinline__
)CU" + HalfNanBits() +
         R"CU(UOPC_FN float uopc_f16_to_f32(uint16_t h) {
  if ((h & 0x7fffu) > 0x7c00u) return __uint_as_float(uopc_f16_nan_to_f32_bits(h));
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
UOPC_FN uint16_t uopc_f32_to_f16(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uopc_f32_nan_to_f16_bits(u);
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
)CU" + kPreludeTail +
         CStyleHelpers();
}

std::string CudaOnCpuPrelude() {
  return R"CU(#define UOPC_FN static inline
)CU" + HalfNanBits() +
         R"CU(UOPC_FN float uopc_f16_to_f32(uint16_t h) {
  if ((h & 0x7fffu) > 0x7c00u) return __uint_as_float(uopc_f16_nan_to_f32_bits(h));
  return ::uopc::F16ToF32(h);  /* (exact, as cvt.f32.f16) */
}
UOPC_FN uint16_t uopc_f32_to_f16(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uopc_f32_nan_to_f16_bits(u);
  return CvtRnF16(f);
}
)CU" + kPreludeTail +
         CStyleHelpers();
}

absl::StatusOr<CudaKernel> RenderCudaKernel(const UOp& kernel, absl::string_view name,
                                            const LaunchLimits& limits) {
  RETURN_IF_ERROR(Verify(kernel));
  CudaKernel out;
  ASSIGN_OR_RETURN(UOp mapped, MapToLaunchDims(kernel, limits, &out.dims));
  ASSIGN_OR_RETURN(std::vector<UOp> program, Linearize(mapped));
  ASSIGN_OR_RETURN(out.source, RenderC(program, name, CLang::kCuda));
  return out;
}

}  // namespace uopc
