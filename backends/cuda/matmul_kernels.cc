#include "backends/cuda/matmul_kernels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace uopc::cuda {
namespace {

// Every variant takes (out, a, b, Mm): Mm is MatmulParams' 19 values in their order, passed by
// value. AT: a's unit stride is along its rows' index i (a transposed), else along p; BT: b's
// is along p (b transposed), else along j.
constexpr char kSource[] = R"CUDA(
struct Mm {
  long long batch, m, n, k, a_off, a_batch, a_row, a_col, b_off, b_batch, b_row, b_col;
  long long o_off, o_batch, o_row, batch2, a_batch2, b_batch2, o_batch2;
};
typedef unsigned short bf16_t;

// matmul z's operands (z = outer * batch + inner)
template <typename T>
__device__ __forceinline__ T* At(T* base, const Mm& p, long long z, long long off, long long s1,
                                 long long s2) {
  return base + off + z / p.batch * s2 + z % p.batch * s1;
}

// ---- f32 on the CUDA cores ----

template <int N>
struct Vec;
template <>
struct Vec<4> {
  __device__ __forceinline__ static void Load(const float* s, float* r) {
    const float4 v = *reinterpret_cast<const float4*>(s);
    r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
  }
};
template <>
struct Vec<2> {
  __device__ __forceinline__ static void Load(const float* s, float* r) {
    const float2 v = *reinterpret_cast<const float2*>(s);
    r[0] = v.x, r[1] = v.y;
  }
};

// A block of 256 threads (16 x 16) computes a BM x BM tile of the output; a thread, TH x TH
// outputs in each quarter of it (rows ty * TH and BM/2 + ty * TH; columns likewise with tx).
// Slices of 8 along the sum go through shared memory, two buffers: the next slice is read
// into registers while this one is multiplied.
template <int BM, bool AT, bool BT>
__device__ __forceinline__ void Sgemm(float* __restrict__ out, const float* __restrict__ a,
                                      const float* __restrict__ b, const Mm& p) {
  constexpr int TH = BM / 32, L = BM / 32;  // (L: elements of a slice a thread loads)
  constexpr int PAD = BM + 4;               // (rows apart in banks: stores do not collide)
  __shared__ __align__(16) float As[2][8][PAD], Bs[2][8][PAD];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BM;
  // where this thread loads: a's (i, q) and b's (q, j) within the tile
  const int a_i = AT ? t % 32 * L : t / (8 / L), a_q = AT ? t / 32 : t % (8 / L) * L;
  const int b_q = BT ? t % (8 / L) * L : t / 32, b_j = BT ? t / (8 / L) : t % 32 * L;
  const long long nz = p.batch * p.batch2;
  for (long long z = blockIdx.z; z < nz; z += gridDim.z) {
    const float* A = At(a, p, z, p.a_off, p.a_batch, p.a_batch2);
    const float* B = At(b, p, z, p.b_off, p.b_batch, p.b_batch2);
    float* O = At(out, p, z, p.o_off, p.o_batch, p.o_batch2);
    // the first element this thread loads of each operand, and how far the next slice is
    const bool a_row_ok = AT || m0 + a_i < p.m, b_col_ok = !BT || n0 + b_j < p.n;
    const float* pa = AT ? A + m0 + a_i + a_q * p.a_col : A + (m0 + a_i) * p.a_row + a_q;
    const float* pb = BT ? B + b_q + (n0 + b_j) * p.b_col : B + b_q * p.b_row + n0 + b_j;
    const long long a_step = AT ? 8 * p.a_col : 8, b_step = BT ? 8 : 8 * p.b_row;
    const int a_edge = AT ? (int)min(p.m - m0 - a_i, (long long)L) : L;  // (elements in range)
    const int b_edge = BT ? L : (int)min(p.n - n0 - b_j, (long long)L);
    float ra[L], rb[L];
    auto load = [&](long long k0) {
      const long long left = p.k - k0;  // (of the sum)
#pragma unroll
      for (int e = 0; e < L; ++e) {
        ra[e] = a_row_ok && e < a_edge && a_q + (AT ? 0 : e) < left ? pa[e] : 0.f;
        rb[e] = b_col_ok && e < b_edge && b_q + (BT ? e : 0) < left ? pb[e] : 0.f;
      }
      pa += a_step, pb += b_step;
    };
    auto store = [&](int s) {
#pragma unroll
      for (int e = 0; e < L; ++e) {
        As[s][a_q + (AT ? 0 : e)][a_i + (AT ? e : 0)] = ra[e];
        Bs[s][b_q + (BT ? e : 0)][b_j + (BT ? 0 : e)] = rb[e];
      }
    };
    float acc[2 * TH][2 * TH];
#pragma unroll
    for (int i = 0; i < 2 * TH; ++i)
#pragma unroll
      for (int j = 0; j < 2 * TH; ++j) acc[i][j] = 0.f;
    load(0);
    store(0);
    __syncthreads();
    int s = 0;
    for (long long k0 = 0; k0 < p.k; k0 += 8) {
      const bool more = k0 + 8 < p.k;
      if (more) load(k0 + 8);
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) {
        float fa[2 * TH], fb[2 * TH];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          Vec<TH>::Load(&As[s][kk][h * (BM / 2) + ty * TH], fa + h * TH);
          Vec<TH>::Load(&Bs[s][kk][h * (BM / 2) + tx * TH], fb + h * TH);
        }
#pragma unroll
        for (int i = 0; i < 2 * TH; ++i)
#pragma unroll
          for (int j = 0; j < 2 * TH; ++j) acc[i][j] = __fmaf_rn(fa[i], fb[j], acc[i][j]);
      }
      if (more) store(s ^ 1);
      __syncthreads();
      s ^= 1;
    }
#pragma unroll
    for (int i = 0; i < 2 * TH; ++i) {
      const long long r = m0 + i / TH * (BM / 2) + ty * TH + i % TH;
      if (r >= p.m) continue;
#pragma unroll
      for (int j = 0; j < 2 * TH; ++j) {
        const long long c = n0 + j / TH * (BM / 2) + tx * TH + j % TH;
        if (c < p.n) O[r * p.o_row + c] = acc[i][j];
      }
    }
  }
}

// (blocks a multiprocessor holds: 64 x 64 tiles fit two in the registers; 128 x 128, one)
#define UOPC_SGEMM(BM, BLOCKS, AT, BT)                                                       \
  extern "C" __global__ void __launch_bounds__(256, BLOCKS)                               \
      cuda_sgemm_##BM##_##AT##BT(float* out, const float* a, const float* b, Mm p) {     \
    Sgemm<BM, AT, BT>(out, a, b, p);                                                     \
  }
UOPC_SGEMM(128, 1, 0, 0) UOPC_SGEMM(128, 1, 0, 1) UOPC_SGEMM(128, 1, 1, 0)
UOPC_SGEMM(128, 1, 1, 1) UOPC_SGEMM(64, 2, 0, 0) UOPC_SGEMM(64, 2, 0, 1)
UOPC_SGEMM(64, 2, 1, 0) UOPC_SGEMM(64, 2, 1, 1)

// ---- bf16 on the tensor cores (sm_80 and later) ----
#if __CUDA_ARCH__ >= 800

__device__ __forceinline__ unsigned SharedAddress(const void* p) {
  unsigned r;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}

// f32 -> bf16 bits, to nearest even; a NaN stays a NaN (quiet), as core/float16.h defines
__device__ __forceinline__ bf16_t ToBf16(float f) {
  const unsigned u = __float_as_uint(f);
  return (u & 0x7fffffffu) > 0x7f800000u ? (bf16_t)((u >> 16) | 0x40u)
                                          : (bf16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// The tile of one operand in shared memory, for one slice of 32 along the sum: stored with
// its unit-stride axis contiguous, as global memory has it ("K": 128 rows of 32 along the sum,
// each padded to 40; "MN": 32 rows of 128, padded to 136), so that 16-byte pieces copy
// straight across and ldmatrix's eight row addresses fall in distinct banks.
constexpr int kTile = 128, kSlice = 32, kPadK = 40, kPadMN = 136, kStage = kTile * kPadK;

// Copies a slice of an operand into `dst`: `outer` rows of `inner` elements (128 x 32 or
// 32 x 128), row r of the slice at src + r * stride (the unit stride along the row), rows
// past `outer_end` and elements past `inner_end` zero.
template <bool kRowsAlongSum>
__device__ __forceinline__ void CopySlice(bf16_t* dst, const bf16_t* src, long long stride,
                                          long long outer_end, long long inner_end) {
  constexpr int kInner = kRowsAlongSum ? kSlice : kTile, kPad = kRowsAlongSum ? kPadK : kPadMN;
  constexpr int kChunks = kInner / 8;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int c = threadIdx.x + 256 * r, o = c / kChunks, in = c % kChunks * 8;
    bf16_t* d = dst + o * kPad + in;
    const bf16_t* g = src + o * stride + in;
    if (o < outer_end && in + 8 <= inner_end && ((unsigned long long)g & 15) == 0) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(SharedAddress(d)), "l"(g));
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) d[e] = o < outer_end && in + e < inner_end ? g[e] : (bf16_t)0;
    }
  }
}

template <bool AT, bool BT, bool kBf16Out>
__device__ __forceinline__ void MmaBf16(void* __restrict__ out, const bf16_t* __restrict__ a,
                                        const bf16_t* __restrict__ b, const Mm& p) {
  __shared__ __align__(16) bf16_t As[2][kStage], Bs[2][kStage];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 4, wn = warp % 4;
  const int g = lane / 4, c = lane % 4, q8 = lane / 8, r8 = lane % 8;
  const long long m0 = (long long)blockIdx.y * kTile, n0 = (long long)blockIdx.x * kTile;
  const long long nz = p.batch * p.batch2;
  for (long long z = blockIdx.z; z < nz; z += gridDim.z) {
    const bf16_t* A = At(a, p, z, p.a_off, p.a_batch, p.a_batch2);
    const bf16_t* B = At(b, p, z, p.b_off, p.b_batch, p.b_batch2);
    // slice k0 of each operand into stage s
    auto copy = [&](long long k0, int s) {
      if (AT)  // rows along the sum (q), unit stride along i
        CopySlice<false>(As[s], A + k0 * p.a_col + m0, p.a_col, p.k - k0, p.m - m0);
      else
        CopySlice<true>(As[s], A + m0 * p.a_row + k0, p.a_row, p.m - m0, p.k - k0);
      if (BT)  // rows along j, unit stride along the sum
        CopySlice<true>(Bs[s], B + n0 * p.b_col + k0, p.b_col, p.n - n0, p.k - k0);
      else
        CopySlice<false>(Bs[s], B + k0 * p.b_row + n0, p.b_row, p.k - k0, p.n - n0);
      asm volatile("cp.async.commit_group;\n" ::);
    };
    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    const long long slices = (p.k + kSlice - 1) / kSlice;
    copy(0, 0);
    for (long long ks = 0; ks < slices; ++ks) {
      const int s = ks & 1;
      if (ks + 1 < slices)
        copy((ks + 1) * kSlice, s ^ 1);
      else
        asm volatile("cp.async.commit_group;\n" ::);
      asm volatile("cp.async.wait_group 1;\n" ::);
      __syncthreads();
#pragma unroll
      for (int kb = 0; kb < kSlice; kb += 16) {
        unsigned fa[4][4], fb[4][2];
#pragma unroll
        for (int mt = 0; mt < 4; ++mt) {
          const int rb = wm * 64 + mt * 16;
          const bf16_t* addr =
              AT ? &As[s][(kb + r8 + q8 / 2 * 8) * kPadMN + rb + q8 % 2 * 8]
                 : &As[s][(rb + r8 + q8 % 2 * 8) * kPadK + kb + q8 / 2 * 8];
          if (AT)
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(fa[mt][0]), "=r"(fa[mt][1]), "=r"(fa[mt][2]), "=r"(fa[mt][3])
                         : "r"(SharedAddress(addr)));
          else
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(fa[mt][0]), "=r"(fa[mt][1]), "=r"(fa[mt][2]), "=r"(fa[mt][3])
                         : "r"(SharedAddress(addr)));
        }
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          const int cb = wn * 32 + np * 16;
          const bf16_t* addr =
              BT ? &Bs[s][(cb + r8 + q8 / 2 * 8) * kPadK + kb + q8 % 2 * 8]
                 : &Bs[s][(kb + r8 + q8 % 2 * 8) * kPadMN + cb + q8 / 2 * 8];
          if (BT)
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(fb[2 * np][0]), "=r"(fb[2 * np][1]), "=r"(fb[2 * np + 1][0]),
                           "=r"(fb[2 * np + 1][1])
                         : "r"(SharedAddress(addr)));
          else
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(fb[2 * np][0]), "=r"(fb[2 * np][1]), "=r"(fb[2 * np + 1][0]),
                           "=r"(fb[2 * np + 1][1])
                         : "r"(SharedAddress(addr)));
        }
#pragma unroll
        for (int mt = 0; mt < 4; ++mt)
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
            asm volatile(
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                : "+f"(acc[mt][nt][0]), "+f"(acc[mt][nt][1]), "+f"(acc[mt][nt][2]),
                  "+f"(acc[mt][nt][3])
                : "r"(fa[mt][0]), "r"(fa[mt][1]), "r"(fa[mt][2]), "r"(fa[mt][3]),
                  "r"(fb[nt][0]), "r"(fb[nt][1]));
      }
      __syncthreads();
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
    // the accumulators: rows g and g + 8 of each m16 tile, columns 2c and 2c + 1 of each n8
    const long long o_base = p.o_off + z / p.batch * p.o_batch2 + z % p.batch * p.o_batch;
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long r = m0 + wm * 64 + mt * 16 + g + h * 8;
        if (r >= p.m) continue;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const long long col = n0 + wn * 32 + nt * 8 + 2 * c + e;
            if (col >= p.n) continue;
            const long long o = o_base + r * p.o_row + col;
            if (kBf16Out)
              static_cast<bf16_t*>(out)[o] = ToBf16(acc[mt][nt][2 * h + e]);
            else
              static_cast<float*>(out)[o] = acc[mt][nt][2 * h + e];
          }
      }
  }
}

#define UOPC_MMA(OUT, BF16_OUT, AT, BT)                                                     \
  extern "C" __global__ void __launch_bounds__(256) cuda_mma_bf16_to_##OUT##_##AT##BT(      \
      void* out, const bf16_t* a, const bf16_t* b, Mm p) {                                  \
    MmaBf16<AT, BT, BF16_OUT>(out, a, b, p);                                                \
  }
UOPC_MMA(f32, false, 0, 0) UOPC_MMA(f32, false, 0, 1) UOPC_MMA(f32, false, 1, 0)
UOPC_MMA(f32, false, 1, 1) UOPC_MMA(bf16, true, 0, 0) UOPC_MMA(bf16, true, 0, 1)
UOPC_MMA(bf16, true, 1, 0) UOPC_MMA(bf16, true, 1, 1)
#endif
)CUDA";

constexpr int kThreads = 256;

}  // namespace

std::vector<SuppliedKernel> MatmulKernels(int arch) {
  // (below a few hundred thousand operations a generated kernel's launch is as quick)
  constexpr int64_t kMin = 1 << 18;
  std::vector<SuppliedKernel> k = {
      {"cuda_sgemm", "matmul", DType::kF32, DType::kF32, DType::kF32, kMin}};
  if (arch >= 80) {
    k.push_back({"cuda_mma_bf16_to_f32", "matmul", DType::kBF16, DType::kBF16, DType::kF32, kMin});
    k.push_back(
        {"cuda_mma_bf16_to_bf16", "matmul", DType::kBF16, DType::kBF16, DType::kBF16, kMin});
  }
  return k;
}

const std::string& MatmulKernelsSource() {
  static const std::string* source = new std::string(kSource);
  return *source;
}

std::vector<std::string> MatmulEntries() {
  std::vector<std::string> out;
  for (const char* layout : {"00", "01", "10", "11"}) {
    out.push_back(absl::StrCat("cuda_sgemm_128_", layout));
    out.push_back(absl::StrCat("cuda_sgemm_64_", layout));
  }
  for (const char* layout : {"00", "01", "10", "11"}) {
    out.push_back(absl::StrCat("cuda_mma_bf16_to_f32_", layout));
    out.push_back(absl::StrCat("cuda_mma_bf16_to_bf16_", layout));
  }
  return out;
}

absl::StatusOr<MatmulLaunch> PlanMatmulLaunch(const std::string& name, const MatmulParams& p,
                                              int multiprocessors) {
  // the layout: a transposed where its unit stride is along i, b where it is along the sum
  const std::string layout = absl::StrCat(p.a_col == 1 ? "0" : "1", p.b_col == 1 ? "0" : "1");
  int64_t tile = 128;
  MatmulLaunch l;
  if (name == "cuda_sgemm") {
    auto blocks = [&](int64_t t) {
      return (p.m + t - 1) / t * ((p.n + t - 1) / t) * p.batch * p.batch2;
    };
    if (blocks(128) < 2 * int64_t{std::max(multiprocessors, 1)}) tile = 64;
    l.entry = absl::StrCat(name, "_", tile, "_", layout);
  } else if (name == "cuda_mma_bf16_to_f32" || name == "cuda_mma_bf16_to_bf16") {
    l.entry = absl::StrCat(name, "_", layout);
  } else {
    return absl::NotFoundError(absl::StrCat("the CUDA plugin supplies no kernel '", name, "'"));
  }
  l.grid = {static_cast<uint32_t>(std::max<int64_t>(1, (p.n + tile - 1) / tile)),
            static_cast<uint32_t>(std::max<int64_t>(1, (p.m + tile - 1) / tile)),
            static_cast<uint32_t>(std::clamp<int64_t>(p.batch * p.batch2, 1, 65535))};
  l.block = {kThreads, 1, 1};
  return l;
}

}  // namespace uopc::cuda
