#include "backends/c/avx2_sgemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "backends/c/packed_b_cache.h"
#include "backends/c/scratch.h"
#include "backends/c/thread_pool.h"
#include "core/float16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace uopc::cpu {
namespace {

constexpr int64_t kMr = 6, kNr = 16;  // the register tile: rows, and columns (two vectors)
// Where one or two panels of a's rows share each panel of b, b (f32) is read where it lies
// (its rows contiguous): packing it would cost about what they compute (a decode step's few
// rows).
constexpr int64_t kDirectRowPanels = 2;
// Where at most this many panels of b's columns reuse each packed panel of a's rows, a (f32)
// is read where it lies instead: packing a cost about a third of what those panels compute
// (a GPT of width 64: 13% of a training step's time). A 1024 x 1024 x 1024 matmul (64
// panels) is 5% faster packed.
constexpr int64_t kDirectColPanels = 16;
// ... and where a tile's steps through a block of k span at most this many bytes of a (a
// transposed a takes a line a step, a_col floats apart): 64 pages, what an L1 TLB holds.
constexpr int64_t kDirectAPageSpan = 64 * 4096;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// An operand's element as f32 (a bf16's bits are the top half of an f32's: exact).
inline float F32(float x) { return x; }
inline float F32(uint16_t x) {
  const uint32_t u = uint32_t{x} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

#if defined(__x86_64__)
// The tile of sums at c (kMr rows `ldc` floats apart, kNr columns) plus, or from 0 where
// `first`, the products of a's kMr rows (row r's step q at a + r * a_row + q * a_step: a
// packed panel, or a where it lies) and b's (kc steps of kNr floats, `ldb` apart): each sum in
// order of the steps, one fma a step.
__attribute__((target("avx2,fma"))) void Tile(int64_t kc, const float* a, int64_t a_row,
                                              int64_t a_step, const float* b, int64_t ldb,
                                              float* c, int64_t ldc, bool first) {
  __m256 s[kMr][2];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    s[r][0] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc);
    s[r][1] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + 8);
  }
  // the tile below (the caller's next) on its way into cache while this one sums: its rows
  // lie a row of c apart, and waiting for them stalls every chain at that tile's start. With
  // the steps unrolled by 4, a 1024 matmul on one core of an AMD EPYC (Zen 3) went from
  // 0.87-0.94x OpenBLAS's speed to 1.02-1.04x (medians of 6 runs, alternating processes)
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + (kMr + r) * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + (kMr + r) * ldc + kNr - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p, a += a_step, b += ldb) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * a_row);
      s[r][0] = _mm256_fmadd_ps(x, b0, s[r][0]);
      s[r][1] = _mm256_fmadd_ps(x, b1, s[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    _mm256_storeu_ps(c + r * ldc, s[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, s[r][1]);
  }
}

// 8 consecutive elements as f32 (a bf16's bits are the top half of an f32's: exact)
__attribute__((target("avx2,fma"))) inline __m256 Load8(const float* x) {
  return _mm256_loadu_ps(x);
}
__attribute__((target("avx2,fma"))) inline __m256 Load8(const uint16_t* x) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// r[i][j] -> r[j][i], 8 x 8 floats in registers
__attribute__((target("avx2,fma"))) inline void Transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// 8 steps of 6 rows of a (row r's step q at a + r * lda + q) into pa as f32, step after step
// (pa + q * 6 + r). Element by element, packing a took 4% of the bench GPT's f32 training
// step and 11% of its bf16 one.
static_assert(kMr == 6);
template <typename In>
__attribute__((target("avx2,fma"))) inline void PackSixRowsOfEight(const In* a, int64_t lda,
                                                                   float* pa) {
  __m256 r[8];
#pragma GCC unroll 8
  for (int i = 0; i < 6; ++i) r[i] = Load8(a + i * lda);
  r[6] = r[7] = _mm256_setzero_ps();
  Transpose8(r);
  // step j's 6 values and 2 that step j + 1's overwrites; the last step's 6 alone
#pragma GCC unroll 8
  for (int j = 0; j < 7; ++j) _mm256_storeu_ps(pa + 6 * j, r[j]);
  _mm_storeu_ps(pa + 42, _mm256_castps256_ps128(r[7]));
  _mm_storel_pi(reinterpret_cast<__m64*>(pa + 46), _mm256_extractf128_ps(r[7], 1));
}

// 8 steps of 8 columns of a transposed b (column c's step q at b + c * ldb + q) into 8 rows
// of dst, `ldd` apart
template <typename In>
__attribute__((target("avx2,fma"))) inline void PackEightColumnsOfEight(const In* b, int64_t ldb,
                                                                        float* dst, int64_t ldd) {
  __m256 r[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) r[i] = Load8(b + i * ldb);
  Transpose8(r);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + j * ldd, r[j]);
}

// The 6 elements at a into pa as f32, and 2 zeros after them (what the next step's call
// overwrites: the last step is left to the caller).
__attribute__((target("avx2,fma"))) inline void SixSideBySide(const float* a, float* pa) {
  const __m128 two = _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(a + 4));
  _mm256_storeu_ps(pa, _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a)), two, 1));
}
__attribute__((target("avx2,fma"))) inline void SixSideBySide(const uint16_t* a, float* pa) {
  uint32_t two;
  std::memcpy(&two, a + 4, sizeof two);
  const __m128i six = _mm_insert_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)),
                                       static_cast<int>(two), 2);
  _mm256_storeu_ps(pa, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(six), 16)));
}

// b's steps [k0, k0 + kc) of the column panels [jp0, jp1) into pb, as f32: panel jp's step q
// is the kNr floats at pb + ((jp - jp0) * kc + q) * kNr, zeros past column n. (For AVX2, and
// with its operands apart, so that its copies are vector copies: at -O2 gcc vectorizes no
// loop whose operands may overlap.)
template <typename In>
__attribute__((target("avx2,fma"))) void PackB(const MatmulParams& p, const In* __restrict b,
                                               int64_t k0, int64_t kc, int64_t jp0, int64_t jp1,
                                               float* __restrict pb) {
  const int64_t full = std::min(jp1, p.n / kNr);  // panels of kNr columns of b
  for (int64_t q = 0; p.b_col == 1 && q < kc; ++q) {  // along b's rows where its columns are
    const In* row = b + (k0 + q) * p.b_row;           // one after the other
    for (int64_t jp = jp0; jp < full; ++jp) {
      float* dst = pb + ((jp - jp0) * kc + q) * kNr;
      for (int64_t c = 0; c < kNr; ++c) dst[c] = F32(row[jp * kNr + c]);
    }
  }
  for (int64_t jp = p.b_col == 1 ? std::max(jp0, full) : jp0; jp < jp1; ++jp) {
    const int64_t j0 = jp * kNr, cols = std::min(kNr, p.n - j0);
    float* dst = pb + (jp - jp0) * kc * kNr;
    int64_t q = 0;
    if (p.b_row == 1 && cols == kNr)  // (b transposed: a column's steps side by side)
      for (; q + 8 <= kc; q += 8, dst += 8 * kNr)
        for (int64_t h = 0; h < kNr; h += 8)
          PackEightColumnsOfEight(b + k0 + q + (j0 + h) * p.b_col, p.b_col, dst + h, kNr);
    for (; q < kc; ++q, dst += kNr) {
      const In* src = b + (k0 + q) * p.b_row + j0 * p.b_col;
      int64_t c = 0;
      for (; c < cols; ++c) dst[c] = F32(src[c * p.b_col]);
      for (; c < kNr; ++c) dst[c] = 0.0f;
    }
  }
}

// a's rows [i0, i1) (i0 a multiple of kMr) of steps [k0, k0 + kc) into pa, as f32: the panel
// of rows i0 + kMr * r's step q is the kMr floats at pa + (r * kc + q) * kMr, zeros past i1.
template <typename In>
__attribute__((target("avx2,fma"))) void PackA(const MatmulParams& p, const In* __restrict a,
                                               int64_t i0, int64_t i1, int64_t k0, int64_t kc,
                                               float* __restrict pa) {
  for (int64_t r0 = i0; r0 < i1; r0 += kMr, pa += kc * kMr) {
    const int64_t rows = std::min(kMr, i1 - r0);
    if (p.a_col == 1 && rows == kMr) {  // kMr rows read side by side, written in order
      const In* src = a + r0 * p.a_row + k0;
      int64_t q = 0;
      for (; q + 8 <= kc; q += 8) PackSixRowsOfEight(src + q, p.a_row, pa + q * kMr);
      for (; q < kc; ++q)
#pragma GCC unroll 6
        for (int64_t r = 0; r < kMr; ++r) pa[q * kMr + r] = F32(src[r * p.a_row + q]);
    } else if (p.a_col == 1) {
      for (int64_t r = 0; r < rows; ++r) {
        const In* src = a + (r0 + r) * p.a_row + k0;
        for (int64_t q = 0; q < kc; ++q) pa[q * kMr + r] = F32(src[q]);
      }
    } else {
      int64_t q = 0;
      if (p.a_row == 1 && rows == kMr)  // a step's kMr rows side by side (a transposed)
        for (; q + 1 < kc; ++q) SixSideBySide(a + r0 + (k0 + q) * p.a_col, pa + q * kMr);
      for (; q < kc; ++q) {
        const In* src = a + r0 * p.a_row + (k0 + q) * p.a_col;
        for (int64_t r = 0; r < rows; ++r) pa[q * kMr + r] = F32(src[r * p.a_row]);
      }
    }
    for (int64_t q = 0; rows < kMr && q < kc; ++q)
      std::fill(pa + q * kMr + rows, pa + (q + 1) * kMr, 0.0f);
  }
}

// out (f32) = a @ b for the call p, a and b of type In.
template <typename In>
void Multiply(const MatmulParams& p, float* out, const In* a, const In* b, BufferVersion b_version,
              int64_t l1d_bytes, int64_t l2_bytes) {
  const int64_t count = p.batch2 * p.batch;
  if (p.k == 0) {  // sums of nothing
    for (int64_t z = 0; z < count; ++z)
      for (int64_t i = 0; i < p.m; ++i)
        std::fill_n(out + p.OutOffset(z) + i * p.out_row, p.n, 0.0f);
    return;
  }
  ThreadPool& pool = ThreadPool::Get();
  const int threads = p.Flops() < kMinThreadedFlops ? 1 : pool.threads();
  // k in near-equal blocks, each at most what keeps a panel of b in half the L1
  const int64_t kc_max = std::max<int64_t>(64, l1d_bytes / 2 / (kNr * 4)),
                kblocks = CeilDiv(p.k, kc_max), kc_all = CeilDiv(p.k, kblocks);
  // a's rows in blocks whose panels take half the L2
  const int64_t mc = std::max<int64_t>(kMr, l2_bytes / 2 / (kc_all * 4) / kMr * kMr);
  const int64_t mp = CeilDiv(p.m, kMr), np = CeilDiv(p.n, kNr);
  const bool direct_b = std::is_same_v<In, float> && p.b_col == 1 && mp <= kDirectRowPanels;
  // a (f32) read where it lies, its full panels of kMr rows, where few panels of b reuse a
  // packed copy (packing costs a pass over a), and a tile's kc steps touch few pages
  const bool direct_a =
      std::is_same_v<In, float> && np <= kDirectColPanels &&
      (p.a_col == 1 || kc_all * std::abs(p.a_col) * int64_t{sizeof(float)} <= kDirectAPageSpan);
  // a single matmul's packed b kept for the calls that find b unchanged: every block of k
  // packed, block k0's panel jp at k0 * np * kNr + jp * kc * kNr (backends/c/packed_b_cache.h)
  PackedBCache::Key key;
  PackedBCache::Use kept;
  if (count == 1 && !direct_b) {
    key = {b_version.id, b, {p.b_offset, p.b_row, p.b_col, p.k, p.n, kc_all}, sizeof(In)};
    kept = PackedBCache::Get().Find(key, b_version, p.k * np * kNr);
  }
  const auto kept_block = [&](int64_t k0) { return kept.data.get() + k0 * np * kNr; };
  // row panels [ip0, ip1) x column panels [jp0, jp1) of matmul z, steps [k0, k0 + kc), b's
  // panels from panel pb_first packed at pb (null: b read where it lies, but for a last panel
  // short of kNr)
  auto multiply = [&](int64_t z, const float* pb, int64_t pb_first, int64_t k0, int64_t kc,
                      int64_t ip0, int64_t ip1, int64_t jp0, int64_t jp1) {
    thread_local Scratch<float> scratch, scratch_edge;
    float* pa = scratch.Get(mc * kc_all);
    const In* az = a + p.AOffset(z);
    const In* bz = b + p.BOffset(z);
    float* oz = out + p.OutOffset(z);
    const bool first = k0 == 0;
    for (int64_t ib = ip0; ib < ip1; ib += mc / kMr) {
      const int64_t ie = std::min(ip1, ib + mc / kMr);
      if (!direct_a)
        PackA(p, az, ib * kMr, std::min(p.m, ie * kMr), k0, kc, pa);
      else if (ie * kMr > p.m)  // a last panel short of kMr rows
        PackA(p, az, (ie - 1) * kMr, p.m, k0, kc, pa + (ie - 1 - ib) * kc * kMr);
      for (int64_t jp = jp0; jp < jp1; ++jp) {
        const int64_t j0 = jp * kNr, cols = std::min(kNr, p.n - j0);
        const float* bp = pb ? pb + (jp - pb_first) * kc * kNr : nullptr;
        int64_t ldb = kNr;
        if constexpr (std::is_same_v<In, float>)
          if (!pb && cols == kNr) bp = bz + k0 * p.b_row + j0, ldb = p.b_row;
        if (!bp) {
          float* edge_b = scratch_edge.Get(kc_all * kNr);
          PackB(p, bz, k0, kc, jp, jp + 1, edge_b);
          bp = edge_b;
        }
        // the next packed panel on its way into L2 while this one's tiles run (a kept one
        // comes from L3: the panel's first tile waited for it)
        if (pb && jp + 1 < jp1)
          for (int64_t q = 0; q < kc; ++q)
            _mm_prefetch(reinterpret_cast<const char*>(bp + (kc + q) * kNr), _MM_HINT_T1);
        for (int64_t ip = ib; ip < ie; ++ip) {
          const int64_t r0 = ip * kMr, rows = std::min(kMr, p.m - r0);
          const float* ap = pa + (ip - ib) * kc * kMr;
          int64_t a_row = 1, a_step = kMr;
          if constexpr (std::is_same_v<In, float>)
            if (direct_a && rows == kMr)
              ap = az + r0 * p.a_row + k0 * p.a_col, a_row = p.a_row, a_step = p.a_col;
          float* c = oz + r0 * p.out_row + j0;
          if (rows == kMr && cols == kNr) {
            Tile(kc, ap, a_row, a_step, bp, ldb, c, p.out_row, first);
            continue;
          }
          alignas(32) float edge[kMr * kNr] = {};
          for (int64_t r = 0; !first && r < rows; ++r)
            std::memcpy(edge + r * kNr, c + r * p.out_row, cols * sizeof(float));
          Tile(kc, ap, a_row, a_step, bp, ldb, edge, kNr, first);
          for (int64_t r = 0; r < rows; ++r)
            std::memcpy(c + r * p.out_row, edge + r * kNr, cols * sizeof(float));
        }
      }
    }
  };
  if (count >= threads && count > 1) {  // a batch of matmuls: one thread each
    pool.ParallelFor(threads, [&](int t) {
      thread_local Scratch<float> scratch_b;
      float* pb = direct_b ? nullptr : scratch_b.Get(np * kNr * kc_all);
      for (int64_t z = count * t / threads; z < count * (t + 1) / threads; ++z)
        for (int64_t k0 = 0; k0 < p.k; k0 += kc_all) {
          const int64_t kc = std::min(kc_all, p.k - k0);
          if (pb) PackB(p, b + p.BOffset(z), k0, kc, 0, np, pb);
          multiply(z, pb, 0, k0, kc, 0, mp, 0, np);
        }
    });
    return;
  }
  // the threads split the row panels, or the column panels where those split more evenly
  // (or as evenly: then each thread packs its own panels of b, and no barrier waits for the
  // others' between packing and multiplying)
  const auto longest = [&](int64_t panels) {
    return CeilDiv(panels, threads) * threads * 1.0 / panels;
  };
  const bool by_rows = longest(mp) < longest(np);
  if (direct_b || !by_rows) {  // each thread its share of every block of k, in order
    pool.ParallelFor(threads, [&](int t) {
      thread_local Scratch<float> scratch_b;
      const int64_t ip0 = by_rows ? mp * t / threads : 0,
                    ip1 = by_rows ? mp * (t + 1) / threads : mp,
                    jp0 = by_rows ? 0 : np * t / threads,
                    jp1 = by_rows ? np : np * (t + 1) / threads;
      float* pb = direct_b || kept.data ? nullptr : scratch_b.Get((jp1 - jp0) * kNr * kc_all);
      for (int64_t z = 0; z < count; ++z)
        for (int64_t k0 = 0; k0 < p.k; k0 += kc_all) {
          const int64_t kc = std::min(kc_all, p.k - k0);
          if (kept.data) {  // (this thread's panels of it)
            if (!kept.filled)
              PackB(p, b + p.BOffset(z), k0, kc, jp0, jp1, kept_block(k0) + jp0 * kc * kNr);
            multiply(z, kept_block(k0), 0, k0, kc, ip0, ip1, jp0, jp1);
            continue;
          }
          if (pb) PackB(p, b + p.BOffset(z), k0, kc, jp0, jp1, pb);
          multiply(z, pb, jp0, k0, kc, ip0, ip1, jp0, jp1);
        }
    });
    if (kept.data && !kept.filled) PackedBCache::Get().Ready(key, b_version);
    return;
  }
  thread_local Scratch<float> scratch_b;  // (the queue's thread's)
  float* const scratch_pb = kept.data ? nullptr : scratch_b.Get(np * kNr * kc_all);
  for (int64_t z = 0; z < count; ++z)
    for (int64_t k0 = 0; k0 < p.k; k0 += kc_all) {
      const int64_t kc = std::min(kc_all, p.k - k0);
      float* pb = kept.data ? kept_block(k0) : scratch_pb;
      if (!kept.filled)
        pool.ParallelFor(threads, [&](int t) {
          const int64_t jp0 = np * t / threads;
          PackB(p, b + p.BOffset(z), k0, kc, jp0, np * (t + 1) / threads, pb + jp0 * kc * kNr);
        });
      pool.ParallelFor(threads, [&](int t) {
        multiply(z, pb, 0, k0, kc, mp * t / threads, mp * (t + 1) / threads, 0, np);
      });
    }
  if (kept.data && !kept.filled) PackedBCache::Get().Ready(key, b_version);
}

// n f32 sums rounded to bf16, F32ToBF16's arithmetic on 8 a step (a call an element took
// 13% of a bf16 training step's samples, and gcc at -O2 leaves the loop of it scalar)
__attribute__((target("avx2,fma"))) void RoundToBf16(const float* sums, uint16_t* out,
                                                     int64_t n) {
  const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff),
                magnitude = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000),
                quiet = _mm256_set1_epi32(0x40);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(sums + j));
    const __m256i high = _mm256_srli_epi32(u, 16);
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(u, _mm256_add_epi32(half, _mm256_and_si256(high, one))), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, magnitude), inf);
    const __m256i bits = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, quiet), nan);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j),  // (each below 2^16: exact)
                     _mm_packus_epi32(_mm256_castsi256_si128(bits),
                                      _mm256_extracti128_si256(bits, 1)));
  }
  for (; j < n; ++j) out[j] = F32ToBF16(sums[j]);
}
#endif

}  // namespace

absl::Status RunAvx2Sgemm(const MatmulParams& p, void* out, bool bf16_out, const void* a,
                          const void* b, bool bf16_in, BufferVersion b_version, int64_t l1d_bytes,
                          int64_t l2_bytes) {
#if !defined(__x86_64__)
  return absl::UnimplementedError("avx2_sgemm: not an x86-64 CPU");
#else
  MatmulParams sums = p;  // where the f32 sums go: out, or a scratch, one matmul after another
  float* sums_out = static_cast<float*>(out);
  thread_local Scratch<float> scratch;  // (the queue's thread's)
  const int64_t count = p.batch2 * p.batch;
  if (bf16_out) {
    sums.out_offset = 0, sums.out_row = p.n, sums.out_batch = p.m * p.n;
    sums.out_batch2 = p.batch * p.m * p.n;
    sums_out = scratch.Get(count * p.m * p.n);
  }
  if (bf16_in)
    Multiply(sums, sums_out, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b),
             b_version, l1d_bytes, l2_bytes);
  else
    Multiply(sums, sums_out, static_cast<const float*>(a), static_cast<const float*>(b), b_version,
             l1d_bytes, l2_bytes);
  if (bf16_out) {  // each sum rounded once, the rows shared among the matmul's threads
    uint16_t* o = static_cast<uint16_t*>(out);
    ThreadPool& pool = ThreadPool::Get();
    const int threads = p.Flops() < kMinThreadedFlops ? 1 : pool.threads();
    const int64_t rows = count * p.m;
    pool.ParallelFor(threads, [&](int t) {
      for (int64_t zi = rows * t / threads; zi < rows * (t + 1) / threads; ++zi) {
        const int64_t z = zi / p.m, i = zi % p.m;
        RoundToBf16(sums_out + sums.OutOffset(z) + i * p.n, o + p.OutOffset(z) + i * p.out_row,
                    p.n);
      }
    });
  }
  return absl::OkStatus();
#endif
}

}  // namespace uopc::cpu
