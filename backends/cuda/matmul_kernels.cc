#include "backends/cuda/matmul_kernels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "core/dtype.h"

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

// ---- bf16 and f16 on the tensor cores (sm_80 and later; f16 is carried as its bits) ----
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

// f32 -> f16 bits, to nearest even (cvt); a NaN keeps its top payload bits, quiet, as
// core/float16.h defines (cvt makes every NaN 0x7fff)
__device__ __forceinline__ bf16_t ToF16(float f) {
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (bf16_t)(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu));
  bf16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

// A slice of one operand in shared memory: stored with its unit-stride axis contiguous, as
// global memory has it (ROWS rows of COLS elements, each row padded by 8), so that 16-byte
// pieces copy straight across and ldmatrix's eight row addresses fall in distinct banks.
// Copies rows [0, ROWS) of src (row r at src + r * stride) into dst: rows past `outer_end`
// and elements past `inner_end` zero.
template <int ROWS, int COLS>
__device__ __forceinline__ void CopySlice(bf16_t* dst, const bf16_t* src, long long stride,
                                          long long outer_end, long long inner_end) {
  constexpr int kChunks = COLS / 8, kPer = ROWS * kChunks / 256;
#pragma unroll
  for (int r = 0; r < kPer; ++r) {
    const int c = threadIdx.x + 256 * r, o = c / kChunks, in = c % kChunks * 8;
    bf16_t* d = dst + o * (COLS + 8) + in;
    const bf16_t* g = src + o * stride + in;
    if (o < outer_end && in + 8 <= inner_end && ((unsigned long long)g & 15) == 0) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(SharedAddress(d)), "l"(g));
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) d[e] = o < outer_end && in + e < inner_end ? g[e] : (bf16_t)0;
    }
  }
}

// A block of 8 warps (2 x 4) computes a 128 x BN tile of the output, a warp 64 x BN/4, in
// slices of BK along the sum; S stages of slices in dynamic shared memory, so that S - 1
// slices are on their way while one is multiplied.
template <int BK, int BN>
struct MmaShape {
  static constexpr int kA = (128 * (BK + 8) > BK * 136) ? 128 * (BK + 8) : BK * 136;
  static constexpr int kB = (BN * (BK + 8) > BK * (BN + 8)) ? BN * (BK + 8) : BK * (BN + 8);
};

template <bool kF16, bool AT, bool BT, bool kHalfOut, int S, int BK, int BN>
__device__ __forceinline__ void MmaHalf(void* __restrict__ out, const bf16_t* __restrict__ a,
                                        const bf16_t* __restrict__ b, const Mm& p) {
  constexpr int kA = MmaShape<BK, BN>::kA, kB = MmaShape<BK, BN>::kB, NT = BN / 32;
  extern __shared__ __align__(16) unsigned char shared[];
  bf16_t* const As = reinterpret_cast<bf16_t*>(shared);
  bf16_t* const Bs = As + S * kA;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 4, wn = warp % 4;
  const int g = lane / 4, c = lane % 4, q8 = lane / 8, r8 = lane % 8;
  const long long m0 = (long long)blockIdx.y * 128, n0 = (long long)blockIdx.x * BN;
  const long long nz = p.batch * p.batch2;
  for (long long z = blockIdx.z; z < nz; z += gridDim.z) {
    const bf16_t* A = At(a, p, z, p.a_off, p.a_batch, p.a_batch2);
    const bf16_t* B = At(b, p, z, p.b_off, p.b_batch, p.b_batch2);
    // slice k0 of each operand into stage s
    auto copy = [&](long long k0, int s) {
      if (AT)  // rows along the sum (q), unit stride along i
        CopySlice<BK, 128>(As + s * kA, A + k0 * p.a_col + m0, p.a_col, p.k - k0, p.m - m0);
      else
        CopySlice<128, BK>(As + s * kA, A + m0 * p.a_row + k0, p.a_row, p.m - m0, p.k - k0);
      if (BT)  // rows along j, unit stride along the sum
        CopySlice<BN, BK>(Bs + s * kB, B + n0 * p.b_col + k0, p.b_col, p.n - n0, p.k - k0);
      else
        CopySlice<BK, BN>(Bs + s * kB, B + k0 * p.b_row + n0, p.b_row, p.k - k0, p.n - n0);
      asm volatile("cp.async.commit_group;\n" ::);
    };
    float acc[4][NT][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    const long long slices = (p.k + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < S - 1; ++s)
      if (s < slices)
        copy(s * BK, s);
      else
        asm volatile("cp.async.commit_group;\n" ::);
    int s = 0;  // (the stage of slice ks)
    for (long long ks = 0; ks < slices; ++ks) {
      // slice ks has come (S - 2 later ones may be on their way), and every warp is done
      // with slice ks - 1, whose stage the slice S - 1 ahead takes
      asm volatile("cp.async.wait_group %0;\n" ::"n"(S - 2));
      __syncthreads();
      if (ks + S - 1 < slices)
        copy((ks + S - 1) * BK, s == 0 ? S - 1 : s - 1);
      else
        asm volatile("cp.async.commit_group;\n" ::);
      const bf16_t* as = As + s * kA;
      const bf16_t* bs = Bs + s * kB;
#pragma unroll 1
      for (int kb = 0; kb < BK; kb += 16) {
        unsigned fa[4][4], fb[NT][2];
#pragma unroll
        for (int mt = 0; mt < 4; ++mt) {
          const int rb = wm * 64 + mt * 16;
          const bf16_t* addr = AT ? as + (kb + r8 + q8 / 2 * 8) * 136 + rb + q8 % 2 * 8
                                  : as + (rb + r8 + q8 % 2 * 8) * (BK + 8) + kb + q8 / 2 * 8;
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
        for (int np = 0; np < NT / 2; ++np) {
          const int cb = wn * (BN / 4) + np * 16;
          const bf16_t* addr = BT ? bs + (cb + r8 + q8 / 2 * 8) * (BK + 8) + kb + q8 % 2 * 8
                                  : bs + (kb + r8 + q8 % 2 * 8) * (BN + 8) + cb + q8 / 2 * 8;
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
        // (not volatile: the products may be scheduled among the next fragments' loads)
#pragma unroll
        for (int mt = 0; mt < 4; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
            if (kF16)
              asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                  "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                  : "+f"(acc[mt][nt][0]), "+f"(acc[mt][nt][1]), "+f"(acc[mt][nt][2]),
                    "+f"(acc[mt][nt][3])
                  : "r"(fa[mt][0]), "r"(fa[mt][1]), "r"(fa[mt][2]), "r"(fa[mt][3]),
                    "r"(fb[nt][0]), "r"(fb[nt][1]));
            else
              asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                  "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                  : "+f"(acc[mt][nt][0]), "+f"(acc[mt][nt][1]), "+f"(acc[mt][nt][2]),
                    "+f"(acc[mt][nt][3])
                  : "r"(fa[mt][0]), "r"(fa[mt][1]), "r"(fa[mt][2]), "r"(fa[mt][3]),
                    "r"(fb[nt][0]), "r"(fb[nt][1]));
      }
      s = s == S - 1 ? 0 : s + 1;
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads();  // (the next matmul's slices take the stages)
    // the accumulators: rows g and g + 8 of each m16 tile, columns 2c and 2c + 1 of each n8
    const long long o_base = p.o_off + z / p.batch * p.o_batch2 + z % p.batch * p.o_batch;
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long r = m0 + wm * 64 + mt * 16 + g + h * 8;
        if (r >= p.m) continue;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const long long col = n0 + wn * (BN / 4) + nt * 8 + 2 * c + e;
            if (col >= p.n) continue;
            const long long o = o_base + r * p.o_row + col;
            if (kHalfOut)
              static_cast<bf16_t*>(out)[o] =
                  kF16 ? ToF16(acc[mt][nt][2 * h + e]) : ToBf16(acc[mt][nt][2 * h + e]);
            else
              static_cast<float*>(out)[o] = acc[mt][nt][2 * h + e];
          }
      }
  }
}

// the shapes (stages, slice, block columns), as kMmaShapes names them
#define UOPC_SHAPE_n128 4, 32, 128
#define UOPC_SHAPE_n256 3, 32, 256
#define UOPC_MMA(IN, F16, OUT, HALF_OUT, AT, BT, SHAPE)                                        \
  extern "C" __global__ void __launch_bounds__(256)                                           \
      cuda_mma_##IN##_to_##OUT##_##AT##BT##_##SHAPE(void* out, const bf16_t* a, const bf16_t* b, \
                                                    Mm p) {                                   \
    MmaHalf<F16, AT, BT, HALF_OUT, UOPC_SHAPE_##SHAPE>(out, a, b, p);                         \
  }
#define UOPC_MMA_LAYOUTS(IN, F16, OUT, HALF_OUT, SHAPE)                                        \
  UOPC_MMA(IN, F16, OUT, HALF_OUT, 0, 0, SHAPE) UOPC_MMA(IN, F16, OUT, HALF_OUT, 0, 1, SHAPE)  \
  UOPC_MMA(IN, F16, OUT, HALF_OUT, 1, 0, SHAPE) UOPC_MMA(IN, F16, OUT, HALF_OUT, 1, 1, SHAPE)
#define UOPC_MMA_SHAPE(SHAPE)                                                                   \
  UOPC_MMA_LAYOUTS(bf16, false, f32, false, SHAPE) UOPC_MMA_LAYOUTS(bf16, false, bf16, true, SHAPE) \
  UOPC_MMA_LAYOUTS(f16, true, f32, false, SHAPE) UOPC_MMA_LAYOUTS(f16, true, f16, true, SHAPE)
UOPC_MMA_SHAPE(n128) UOPC_MMA_SHAPE(n256)
#endif
)CUDA";

constexpr int kThreads = 256;
// the tensor-core kernels' shapes (the source's UOPC_SHAPE_*)
struct MmaShape {
  const char* name;
  int stages, slice, columns;
  // dynamic shared memory: each stage a slice of a (128 rows) and of b (`columns`), their
  // unit-stride axes padded by 8 (the source's MmaShape)
  int64_t SharedBytes() const {
    auto stage = [&](int64_t rows) { return std::max(rows * (slice + 8), slice * (rows + 8)); };
    return stages * (stage(128) + stage(columns)) * 2;
  }
};
// (measured on an H200, bf16 4096 x 4096 x 4096: 128 x 256 tiles 188-195 TFLOP/s, 128 x 128
// ones 137-161, 128 x 128 in slices of 64 175)
constexpr MmaShape kMmaShapes[] = {{"n256", 3, 32, 256}, {"n128", 4, 32, 128}};

}  // namespace

std::vector<SuppliedKernel> MatmulKernels(int arch) {
  // (below a few hundred thousand operations a generated kernel's launch is as quick)
  constexpr int64_t kMin = 1 << 18;
  std::vector<SuppliedKernel> k = {
      {"cuda_sgemm", "matmul", DType::kF32, DType::kF32, DType::kF32, kMin}};
  if (arch >= 80)
    for (DType half : {DType::kBF16, DType::kF16}) {
      const std::string in(DTypeName(half));
      k.push_back({"cuda_mma_" + in + "_to_f32", "matmul", half, half, DType::kF32, kMin});
      k.push_back({"cuda_mma_" + in + "_to_" + in, "matmul", half, half, half, kMin});
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
    for (const char* in : {"bf16", "f16"})
      for (const std::string to : {"f32", in})
        for (const MmaShape& shape : kMmaShapes)
          out.push_back(absl::StrCat("cuda_mma_", in, "_to_", to, "_", layout, "_", shape.name));
  }
  return out;
}

absl::StatusOr<MatmulLaunch> PlanMatmulLaunch(const std::string& name, const MatmulParams& p,
                                              int multiprocessors, const std::string& mma_shape) {
  const std::string layout = absl::StrCat(int{p.ATransposed()}, int{p.BTransposed()});
  const std::vector<SuppliedKernel> supplied = MatmulKernels(80);  // (every kernel's name)
  if (std::none_of(supplied.begin(), supplied.end(),
                   [&](const SuppliedKernel& k) { return k.name == name; }))
    return absl::NotFoundError(absl::StrCat("the CUDA plugin supplies no kernel '", name, "'"));
  int64_t tile = 128, columns = 128;
  MatmulLaunch l;
  auto blocks = [&](int64_t rows, int64_t cols) {
    return (p.m + rows - 1) / rows * ((p.n + cols - 1) / cols) * p.batch * p.batch2;
  };
  if (name == "cuda_sgemm") {
    if (blocks(128, 128) < 2 * int64_t{std::max(multiprocessors, 1)}) tile = columns = 64;
    l.entry = absl::StrCat(name, "_", tile, "_", layout);
  } else {  // a tensor-core kernel
    // 128 x 256 tiles, unless too few of them would fill the GPU twice over
    const MmaShape* shape = &kMmaShapes[0];
    if (blocks(128, 256) < 2 * int64_t{std::max(multiprocessors, 1)}) shape = &kMmaShapes[1];
    if (!mma_shape.empty()) {
      shape = nullptr;
      for (const MmaShape& sh : kMmaShapes)
        if (mma_shape == sh.name) shape = &sh;
      if (!shape)
        return absl::InvalidArgumentError(
            absl::StrCat("no tensor-core kernel shape '", mma_shape, "' (n256, n128)"));
    }
    l.entry = absl::StrCat(name, "_", layout, "_", shape->name);
    l.shared_bytes = static_cast<uint32_t>(shape->SharedBytes());
    columns = shape->columns;
  }
  const int64_t blocks_n = (p.n + columns - 1) / columns, rows = (p.m + tile - 1) / tile;
  if (rows > 65535)
    return absl::OutOfRangeError(
        absl::StrCat(name, ": ", p.ToString(), " has more than 65535 x ", tile, " rows"));
  l.grid = {static_cast<uint32_t>(std::max<int64_t>(1, blocks_n)),
            static_cast<uint32_t>(std::max<int64_t>(1, rows)),
            static_cast<uint32_t>(std::clamp<int64_t>(p.batch * p.batch2, 1, 65535))};
  l.block = {kThreads, 1, 1};
  return l;
}

}  // namespace uopc::cuda
