// CUDA C++ on the CPU: include this, then a kernel source written for NVRTC (as
// backends/cuda/matmul_kernels.cu.inc is), and its kernels run on backends/cuda/
// cuda_emulator.h's fibers. It defines the CUDA built-ins the sources use and, by their
// documented semantics (the PTX ISA), the PTX instructions they wrap:
//  - ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: matrix i's eight rows at the addresses
//    lanes 8i to 8i + 7 give (16 bytes each, aligned, in shared memory); lane l gets elements
//    (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of it, or with .trans of its transpose;
//  - mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32: with g = lane / 4 and
//    c = lane % 4, a's registers hold A (g, 2c..2c+1), (g + 8, 2c..), (g, 2c + 8..),
//    (g + 8, 2c + 8..); b's, B (2c..2c+1, g) and (2c + 8.., g); d's, D (g, 2c..2c+1) and
//    (g + 8, 2c..). The ISA leaves the order of the sum to the hardware: here each of the 16
//    products (exact in f32) is added to the accumulator in k order with one rounding (fma),
//    which is the matmul's defined result (core/matmul_call.h) summed in slices of 16;
//  - cp.async.cg.shared.global 16 bytes (aligned), copied when the thread waits for its
//    group (cp.async.wait_group), so a read that does not wait sees the old bytes;
//  - cvt.rn.f16.f32: to nearest even, every NaN 0x7fff;
//  - shfl.sync.down (__shfl_down_sync) over the whole warp: lane l gets lane l + c's value,
//    or its own past the warp.
// A source marks each entry with UOPC_ENTRY(name), which adds it to the emulator's table.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

#include "backends/cuda/cuda_emulator.h"
#include "core/float16.h"

#define UOPC_CUDA_ON_CPU 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static thread_local  // (a block's threads share one CPU thread)
#define threadIdx (::uopc::cuda::emu::Ids().thread)
#define blockIdx (::uopc::cuda::emu::Ids().block)
#define blockDim (::uopc::cuda::emu::Ids().block_dim)
#define gridDim (::uopc::cuda::emu::Ids().grid_dim)

namespace uopc::cuda::emu {

// a kernel's entry as the emulator calls it: each argument's value at params[i]
template <typename... A, size_t... I>
void CallEntry(void (*kernel)(A...), void* const* params, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(params[I])...);
}
template <typename... A>
void CallEntry(void (*kernel)(A...), void* const* params) {
  CallEntry(kernel, params, std::index_sequence_for<A...>{});
}

inline uint16_t Half(uint32_t reg, int e) { return static_cast<uint16_t>(reg >> (16 * e)); }

// what a lane gives a warp instruction
struct LdMatrixLane {
  const void* row;  // its row's address
  uint32_t* r[4];   // its registers
};
struct MmaLane {
  float* d;  // its accumulators (c in, d out)
  const uint32_t* a;
  uint32_t b0, b1;
};

template <bool kTrans>
std::string LdMatrixX4Op(void* const lanes[32]) {
  using Lane = LdMatrixLane;
  uint16_t m[4][8][8];  // the four matrices, as their rows lie in shared memory
  for (int i = 0; i < 4; ++i)
    for (int row = 0; row < 8; ++row) {
      const void* at = static_cast<Lane*>(lanes[8 * i + row])->row;
      if (std::string wrong = CheckShared(at, 16, 16); !wrong.empty())
        return absl::StrCat("lane ", 8 * i + row, "'s row: ", wrong);
      std::memcpy(m[i][row], at, 16);
    }
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      const int g = l / 4, c = l % 4;
      const uint16_t lo = kTrans ? m[i][2 * c][g] : m[i][g][2 * c];
      const uint16_t hi = kTrans ? m[i][2 * c + 1][g] : m[i][g][2 * c + 1];
      *static_cast<Lane*>(lanes[l])->r[i] = lo | uint32_t{hi} << 16;
    }
  return "";
}

template <bool kF16>
std::string MmaM16N8K16Op(void* const lanes[32]) {
  using Lane = MmaLane;
  auto value = [](uint32_t reg, int e) {
    return kF16 ? F16ToF32(Half(reg, e)) : BF16ToF32(Half(reg, e));
  };
  float A[16][16], B[16][8], D[16][8];
  for (int l = 0; l < 32; ++l) {
    const Lane& x = *static_cast<Lane*>(lanes[l]);
    const int g = l / 4, c = l % 4;
    for (int e = 0; e < 2; ++e) {
      A[g][2 * c + e] = value(x.a[0], e), A[g + 8][2 * c + e] = value(x.a[1], e);
      A[g][2 * c + 8 + e] = value(x.a[2], e), A[g + 8][2 * c + 8 + e] = value(x.a[3], e);
      B[2 * c + e][g] = value(x.b0, e), B[2 * c + 8 + e][g] = value(x.b1, e);
      D[g][2 * c + e] = x.d[e], D[g + 8][2 * c + e] = x.d[2 + e];
    }
  }
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j)
      for (int k = 0; k < 16; ++k) D[i][j] = std::fma(A[i][k], B[k][j], D[i][j]);
  for (int l = 0; l < 32; ++l) {
    float* d = static_cast<Lane*>(lanes[l])->d;
    const int g = l / 4, c = l % 4;
    for (int e = 0; e < 2; ++e) d[e] = D[g][2 * c + e], d[2 + e] = D[g + 8][2 * c + e];
  }
  return "";
}

template <typename T>
struct ShuffleLane {
  unsigned mask;
  T value;
  unsigned c;
  T out;
};

template <typename T>
std::string ShuffleDownOp(void* const lanes[32]) {
  T values[32];
  for (int l = 0; l < 32; ++l) {
    const auto& x = *static_cast<ShuffleLane<T>*>(lanes[l]);
    if (x.mask != 0xffffffffu) return absl::StrCat("lane ", l, "'s mask is not the whole warp");
    if (x.c != static_cast<ShuffleLane<T>*>(lanes[0])->c)
      return absl::StrCat("lanes 0 and ", l, " shift by different counts");
    values[l] = x.value;
  }
  for (unsigned l = 0; l < 32; ++l) {
    auto& x = *static_cast<ShuffleLane<T>*>(lanes[l]);
    x.out = l + x.c < 32 ? values[l + x.c] : values[l];
  }
  return "";
}

}  // namespace uopc::cuda::emu

#define UOPC_ENTRY(kernel)                                                          \
  [[maybe_unused]] static const bool kernel##_entry = ::uopc::cuda::emu::AddKernel( \
      #kernel, [](void* const* params) { ::uopc::cuda::emu::CallEntry(kernel, params); });

struct float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
using std::max;
using std::min;

inline void __syncthreads() { ::uopc::cuda::emu::SyncThreads(); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float __int_as_float(int i) { return __uint_as_float(static_cast<unsigned>(i)); }
// __shfl_down_sync over the whole warp: lane l gets lane l + c's value, or its own where
// l + c is past the warp
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned c) {
  ::uopc::cuda::emu::ShuffleLane<T> mine{mask, value, c, value};
  ::uopc::cuda::emu::WarpCollective(&::uopc::cuda::emu::ShuffleDownOp<T>, "shfl.sync.down", &mine);
  return mine.out;
}

// ---- the PTX the kernel sources wrap (see the top of this file) ----
inline void CpAsync16(void* shared, const void* global) {
  ::uopc::cuda::emu::CpAsync(shared, global, 16);
}
inline void CpAsyncCommit() { ::uopc::cuda::emu::CpAsyncCommit(); }
template <int N>
void CpAsyncWait() {
  ::uopc::cuda::emu::CpAsyncWait(N);
}
template <bool kTrans>
void LdMatrixX4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, const void* shared) {
  ::uopc::cuda::emu::LdMatrixLane mine{shared, {&r0, &r1, &r2, &r3}};
  ::uopc::cuda::emu::WarpCollective(&::uopc::cuda::emu::LdMatrixX4Op<kTrans>,
                                    kTrans ? "ldmatrix.x4.trans" : "ldmatrix.x4", &mine);
}
template <bool kF16>
void Mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  ::uopc::cuda::emu::MmaLane mine{d, a, b0, b1};
  ::uopc::cuda::emu::WarpCollective(&::uopc::cuda::emu::MmaM16N8K16Op<kF16>,
                                    kF16 ? "mma.sync.m16n8k16.f16" : "mma.sync.m16n8k16.bf16",
                                    &mine);
}
inline uint16_t CvtRnF16(float f) { return std::isnan(f) ? uint16_t{0x7fff} : ::uopc::F32ToF16(f); }
inline unsigned char* DynamicShared() { return ::uopc::cuda::emu::DynamicShared(); }
