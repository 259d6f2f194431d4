#include "backends/c/matmul_kernels.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

#include "backends/c/avx2_sgemm.h"
#include "backends/c/cpu_target.h"
#include "backends/c/scratch.h"
#include "backends/c/thread_pool.h"
#include "backends/cuda/matmul_kernels.h"
#include "core/env.h"
#include "core/float16.h"
#include "core/parse_number.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace uopc::cpu {
namespace {

std::once_flag g_once;
absl::Status g_status;
std::vector<SuppliedKernel> g_kernels;

// A batch of matmuls that is one matmul of batch x m rows: b shared (batch stride 0), a's
// and out's batches one after another (x @ W over a batch of sequences).
MatmulParams Unbatched(MatmulParams p) {
  if (p.batch2 == 1 && p.batch > 1 && p.b_batch == 0 && p.a_batch == p.m * p.a_row &&
      p.out_batch == p.m * p.out_row && (p.a_col == 1 || p.m == 1)) {
    p.m *= p.batch;
    p.batch = 1;
    p.a_batch = p.out_batch = 0;
  }
  return p;
}

// ---- OpenBLAS ----

// cblas_sgemm(order, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
SgemmFn g_sgemm = nullptr;
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

absl::Status OpenBlas() {
  void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return absl::UnavailableError(
        absl::StrCat("c plugin: UOPC_C_BLAS=openblas, but libopenblas.so.0 does not load (",
                     dlerror(), "); install libopenblas0-pthread, or unset UOPC_C_BLAS"));
  g_sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "cblas_sgemm"));
  if (!g_sgemm) return absl::UnavailableError("c plugin: libopenblas.so.0 has no cblas_sgemm");
  if (auto set = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads")))
    set(ThreadPool::Get().threads());
  return absl::OkStatus();
}

// An operand of `rows` x `cols` with strides (rs, cs) as BLAS takes it: transposed or not,
// and its leading dimension; false where it is in neither layout.
bool BlasOperand(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int* trans, int* ld) {
  if (cs == 1 && (rows == 1 || rs >= cols)) {
    *trans = kNoTrans;
    *ld = static_cast<int>(std::max<int64_t>(rows == 1 ? cols : rs, std::max<int64_t>(cols, 1)));
    return true;
  }
  if (rs == 1 && (cols == 1 || cs >= rows)) {
    *trans = kTrans;
    *ld = static_cast<int>(std::max<int64_t>(cols == 1 ? rows : cs, std::max<int64_t>(rows, 1)));
    return true;
  }
  if ((rows == 1 && cs >= 1) || (cols == 1 && rs >= 1)) {  // a strided row or column: its
    *trans = rows == 1 ? kTrans : kNoTrans;                // one axis the leading one
    *ld = static_cast<int>(rows == 1 ? cs : rs);
    return true;
  }
  return false;
}

absl::Status RunSgemm(const MatmulParams& p, float* out, const float* a, const float* b) {
  int ta = 0, tb = 0, lda = 0, ldb = 0;
  if (!BlasOperand(p.m, p.k, p.a_row, p.a_col, &ta, &lda) ||
      !BlasOperand(p.k, p.n, p.b_row, p.b_col, &tb, &ldb))
    return absl::InvalidArgumentError(
        absl::StrCat("openblas_sgemm: ", p.ToString(), ": an operand in no BLAS layout"));
  const int ldc = static_cast<int>(std::max<int64_t>(p.m == 1 ? p.n : p.out_row, 1));
  for (int64_t z = 0; z < p.batch2 * p.batch; ++z)
    g_sgemm(kRowMajor, ta, tb, static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k),
            1.0f, a + p.AOffset(z), lda, b + p.BOffset(z), ldb, 0.0f, out + p.OutOffset(z), ldc);
  return absl::OkStatus();
}

// ---- AMX ----

#if defined(__x86_64__)
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

// Whether this process may use the tiles (Linux asks each process to request them).
bool AmxUsable() { return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0; }

struct TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Packed operands. a: per 32 rows, per 32 of k, the two 16 x 32 tiles one after the other
// (2 KiB: a tile's rows are 64 bytes apart). b: per 32 columns, two panels (16 columns each)
// of k/2 rows of 16 VNNI pairs. kp: k rounded up to 32; both are zero-padded.
int64_t PackedA(int64_t i, int64_t q, int64_t kp) {
  return (i / 32) * 32 * kp + (q / 32) * 1024 + (i % 32) * 32 + q % 32;
}

// Adds the products of k in [k0, k1) to the 32 x 32 block of f32 sums at `c` (32 floats a
// row), or sets it where `first`: a's block of 32 rows and b's 32 columns, packed, in two by
// two tiles (four accumulators).
__attribute__((target("amx-tile,amx-bf16"))) void AmxBlock(const uint16_t* a, const uint16_t* b,
                                                           int64_t kp, int64_t k0, int64_t k1,
                                                           float* c, bool first) {
  if (first) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  } else {
    _tile_loadd(0, c, 128);
    _tile_loadd(1, c + 16, 128);
    _tile_loadd(2, c + 16 * 32, 128);
    _tile_loadd(3, c + 16 * 32 + 16, 128);
  }
  const uint16_t* b1 = b + (kp / 2) * 32;  // the second 16 columns' panel
  for (int64_t k = k0; k < k1; k += 32) {
    const uint16_t* ak = a + k * 32;
    _tile_loadd(4, ak, 64);
    _tile_loadd(6, b + (k / 2) * 32, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, b1 + (k / 2) * 32, 64);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, ak + 16 * 32, 64);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, 128);
  _tile_stored(1, c + 16, 128);
  _tile_stored(2, c + 16 * 32, 128);
  _tile_stored(3, c + 16 * 32 + 16, 128);
}

constexpr TileConfig EightFullTiles() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  return cfg;
}
// A constant in memory: gcc 12's _tile_loadconfig tells the compiler that it reads 8 bytes
// of the config, so the stores of a local's other 56 may be dropped (they were, in a test).
alignas(64) constexpr TileConfig kEightFullTiles = EightFullTiles();

__attribute__((target("amx-tile,amx-bf16"))) void AmxConfigure() {
  _tile_loadconfig(&kEightFullTiles);
}

__attribute__((target("amx-tile"))) void AmxRelease() { _tile_release(); }

int64_t RoundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// (gcc 12 warns about the undefined vectors inside its own AVX-512 intrinsics)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// 16 f32 sums to bf16 (F32ToBF16's arithmetic in AVX-512 integers: every CPU with AMX has
// AVX-512).
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void Bf16x16(const float* in,
                                                                               uint16_t* out) {
  const __m512i u = _mm512_castps_si512(_mm512_loadu_ps(in));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quiet)));
}

// A block's f32 sums (`rows` x `cols` of 32 x 32, 32 floats a row) to out, `out_row`
// elements a row, as f32 or rounded to bf16: one call a block (a call a row cost more than
// the tiles' products where k is short).
__attribute__((target("avx512f,avx512bw"))) void BlockOut(const float* c, void* out, bool bf16,
                                                          int64_t out_row, int64_t rows,
                                                          int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = c + r * 32;
    if (!bf16) {
      std::memcpy(static_cast<float*>(out) + r * out_row, in, cols * sizeof(float));
      continue;
    }
    uint16_t* o = static_cast<uint16_t*>(out) + r * out_row;
    int64_t x = 0;
    for (; x + 16 <= cols; x += 16) Bf16x16(in + x, o + x);
    for (; x < cols; ++x) o[x] = F32ToBF16(in[x]);
  }
}

// Two rows of b (r1 null: zeros) as VNNI pairs, 16 columns at a time: the pairs of columns
// j..j+15 are one 64-byte row of the panel of column j / 16 (panels `panel` elements apart).
__attribute__((target("avx512f,avx512bw"))) void PairRows(const uint16_t* r0, const uint16_t* r1,
                                                          int64_t n, uint16_t* dst, int64_t panel) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512i lo =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + j)));
    const __m512i hi =
        r1 ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1 + j)))
           : _mm512_setzero_si512();
    _mm512_store_si512(dst + j / 16 * panel, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
  }
  for (; j < n; ++j) {
    const uint32_t pair = r0[j] | (r1 ? uint32_t{r1[j]} << 16 : 0u);
    std::memcpy(dst + j / 16 * panel + (j % 16) * 2, &pair, 4);
  }
}

// Two adjacent k's (q even) of a's m rows, given as two rows of a^T (r1 null: zeros), into
// packed a: the pair of each row is one 32-bit word of its tile row, 16 rows a scatter.
__attribute__((target("avx512f,avx512bw"))) void PairColumns(const uint16_t* r0, const uint16_t* r1,
                                                             int64_t m, uint16_t* pa, int64_t q,
                                                             int64_t kp) {
  const __m512i rows =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(16));  // a tile row is 16 words
  int64_t i = 0;
  for (; i + 16 <= m; i += 16) {
    const __m512i lo =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + i)));
    const __m512i hi =
        r1 ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1 + i)))
           : _mm512_setzero_si512();
    _mm512_i32scatter_epi32(pa + PackedA(i, q, kp), rows,
                            _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)), 4);
  }
  for (; i < m; ++i) {
    const uint32_t pair = r0[i] | (r1 ? uint32_t{r1[i]} << 16 : 0u);
    std::memcpy(pa + PackedA(i, q, kp), &pair, 4);
  }
}
#pragma GCC diagnostic pop

// The caches the blocking is sized for (the target's, at ConfigureMatmulKernels).
int64_t g_l1d_bytes = 32 << 10, g_l2_bytes = 1 << 20;

absl::Status RunAmx(const MatmulParams& p, void* out, bool out_bf16, const uint16_t* a,
                    const uint16_t* b) {
  ThreadPool& pool = ThreadPool::Get();
  const int threads = pool.threads();
  const int64_t mp = RoundUp(p.m, 32), np = RoundUp(p.n, 32),
                kp = RoundUp(std::max<int64_t>(p.k, 1), 32);
  const bool padded = mp != p.m || np != p.n || kp != p.k;
  const int64_t mb = mp / 32, nb = np / 32;
  // part t of `parts` of packing matmul z of the batch into pa and pb
  auto pack = [&](int64_t z, uint16_t* pa, uint16_t* pb, int t, int parts) {
    const uint16_t* az = a + p.AOffset(z);
    const uint16_t* bz = b + p.BOffset(z);
    if (p.a_col == 1) {  // a row's 32 elements of each k step at once
      for (int64_t i = p.m * t / parts; i < p.m * (t + 1) / parts; ++i)
        for (int64_t q = 0; q < p.k; q += 32) {
          uint16_t* dst = pa + PackedA(i, q, kp);
          const uint16_t* src = az + i * p.a_row + q;
          if (q + 32 <= p.k)
            std::memcpy(dst, src, 64);  // (a size the compiler knows: two vector moves)
          else
            std::memcpy(dst, src, (p.k - q) * sizeof(uint16_t));
        }
    } else if (p.a_row == 1) {  // a's columns lie along its rows (x^T of a weight gradient)
      const int64_t pairs = (p.k + 1) / 2;
      for (int64_t h = pairs * t / parts; h < pairs * (t + 1) / parts; ++h) {
        const uint16_t* r0 = az + 2 * h * p.a_col;
        PairColumns(r0, 2 * h + 1 < p.k ? r0 + p.a_col : nullptr, p.m, pa, 2 * h, kp);
      }
    } else {
      for (int64_t q = p.k * t / parts; q < p.k * (t + 1) / parts; ++q)
        for (int64_t i = 0; i < p.m; ++i) pa[PackedA(i, q, kp)] = az[i * p.a_row + q * p.a_col];
    }
    auto put = [&](int64_t q, int64_t j) {
      pb[(j / 16) * (kp / 2) * 32 + (q / 2) * 32 + (j % 16) * 2 + (q % 2)] =
          bz[q * p.b_row + j * p.b_col];
    };
    const int64_t pairs = (p.k + 1) / 2;
    if (p.b_col == 1) {  // two rows at a time, 16 pairs of elements a store
      for (int64_t h = pairs * t / parts; h < pairs * (t + 1) / parts; ++h) {
        const uint16_t* r0 = bz + 2 * h * p.b_row;
        PairRows(r0, 2 * h + 1 < p.k ? r0 + p.b_row : nullptr, p.n, pb + h * 32, (kp / 2) * 32);
      }
    } else if (p.b_row == 1) {  // b's columns lie along k: each pair is one 32-bit load
      for (int64_t j = p.n * t / parts; j < p.n * (t + 1) / parts; ++j) {
        const uint16_t* col = bz + j * p.b_col;
        uint16_t* dst = pb + (j / 16) * (kp / 2) * 32 + (j % 16) * 2;
        for (int64_t h = 0; h < p.k / 2; ++h) std::memcpy(dst + h * 32, col + 2 * h, 4);
        if (p.k % 2) dst[(p.k / 2) * 32] = col[p.k - 1];
      }
    } else if (p.n == 1) {
      for (int64_t q = p.k * t / parts; q < p.k * (t + 1) / parts; ++q) put(q, 0);
    } else {
      for (int64_t j = p.n * t / parts; j < p.n * (t + 1) / parts; ++j)
        for (int64_t q = 0; q < p.k; ++q) put(q, j);
    }
  };
  // k in steps whose slice of a column panel of b (64 bytes per k) takes at most a third of
  // the L1, so that it stays there while the rows' blocks stream past (each block's sums go
  // out and come back once a step); where two steps would cover k, one
  const int64_t kc_l1 = std::max<int64_t>(64, g_l1d_bytes / 3 / 64 / 32 * 32),
                kc = kp <= 2 * kc_l1 ? kp : kc_l1;
  // blocks [begin, end) of matmul z's row chunk from block row ib0 (rows_in block rows),
  // columns outermost; the thread's tiles are configured. A run of blocks in one column
  // takes each step of k over all of its rows before the next.
  auto compute = [&](int64_t z, const uint16_t* pa, const uint16_t* pb, int64_t ib0,
                     int64_t rows_in, int64_t begin, int64_t end) {
    thread_local Scratch<float> sums;
    float* c = sums.Get(rows_in * 32 * 32);
    const int64_t oz = p.OutOffset(z);
    for (int64_t run = begin; run < end;) {
      const int64_t jb = run / rows_in, run_end = std::min(end, (jb + 1) * rows_in);
      const uint16_t* panel = pb + jb * 32 * kp;
      auto block_out = [&](int64_t blk) {
        const int64_t ib = ib0 + blk % rows_in;
        const int64_t o = oz + ib * 32 * p.out_row + jb * 32;
        BlockOut(c + (blk - run) * 32 * 32,
                 out_bf16 ? static_cast<void*>(static_cast<uint16_t*>(out) + o)
                          : static_cast<void*>(static_cast<float*>(out) + o),
                 out_bf16, p.out_row, std::min<int64_t>(32, p.m - ib * 32),
                 std::min<int64_t>(32, p.n - jb * 32));
      };
      for (int64_t k0 = 0; k0 < kp; k0 += kc) {
        const bool last = k0 + kc >= kp;
        for (int64_t blk = run; blk < run_end; ++blk) {
          AmxBlock(pa + (ib0 + blk % rows_in) * 32 * kp, panel, kp, k0, std::min(kp, k0 + kc),
                   c + (blk - run) * 32 * 32, k0 == 0);
          // the block before goes out while the tiles compute this one
          if (last && blk > run) block_out(blk - 1);
        }
      }
      block_out(run_end - 1);
      run = run_end;
    }
  };
  // rows in chunks whose packed a fits in a quarter of the L2: a's chunk stays in cache
  // while every column panel of b streams past it
  const int64_t chunk = std::clamp<int64_t>(g_l2_bytes / 4 / (32 * kp * 2), 1, mb);
  auto scratch = [&](Scratch<uint16_t>& sa, Scratch<uint16_t>& sb) {
    uint16_t* pa = sa.Get(mp * kp);
    uint16_t* pb = sb.Get(np * kp);
    if (padded) {
      std::memset(pa, 0, mp * kp * sizeof(uint16_t));
      std::memset(pb, 0, np * kp * sizeof(uint16_t));
    }
    return std::pair<uint16_t*, uint16_t*>(pa, pb);
  };
  const int64_t count = p.batch2 * p.batch;  // matmuls
  if (count >= threads && count > 1) {       // a batch of small matmuls: one thread each
    pool.ParallelFor(threads, [&](int t) {
      thread_local Scratch<uint16_t> sa, sb;
      AmxConfigure();
      for (int64_t z = count * t / threads; z < count * (t + 1) / threads; ++z) {
        const auto [pa, pb] = scratch(sa, sb);
        pack(z, pa, pb, 0, 1);
        for (int64_t ib0 = 0; ib0 < mb; ib0 += chunk) {
          const int64_t rows_in = std::min(chunk, mb - ib0);
          compute(z, pa, pb, ib0, rows_in, 0, rows_in * nb);
        }
      }
      AmxRelease();
    });
    return absl::OkStatus();
  }
  thread_local Scratch<uint16_t> sa, sb;  // (the queue's thread's)
  for (int64_t z = 0; z < count; ++z) {
    const auto [pa, pb] = scratch(sa, sb);
    pool.ParallelFor(threads, [&](int t) { pack(z, pa, pb, t, threads); });
    for (int64_t ib0 = 0; ib0 < mb; ib0 += chunk) {
      const int64_t rows_in = std::min(chunk, mb - ib0), blocks = rows_in * nb;
      pool.ParallelFor(threads, [&](int t) {
        AmxConfigure();
        compute(z, pa, pb, ib0, rows_in, blocks * t / threads, blocks * (t + 1) / threads);
        AmxRelease();
      });
    }
  }
  return absl::OkStatus();
}
#endif

absl::Status Configure(absl::Span<const std::pair<std::string, std::string>> options) {
  bool amx = true;
  std::string blas = "none", sgemm = "auto";
  for (const auto& [key, value] : options) {
    if (key == "amx") {
      if (value != "0" && value != "1")
        return absl::InvalidArgumentError(
            absl::StrCat("c plugin: UOPC_C_AMX=", value, ": expected 0 or 1"));
      amx = value == "1";
    } else if (key == "blas") {
      if (value != "openblas" && value != "none")
        return absl::InvalidArgumentError(
            absl::StrCat("c plugin: UOPC_C_BLAS=", value, ": expected openblas or none"));
      blas = value;
    } else if (key == "sgemm") {
      if (value != "auto" && value != "avx2" && value != "none")
        return absl::InvalidArgumentError(
            absl::StrCat("c plugin: UOPC_C_SGEMM=", value, ": expected auto, avx2 or none"));
      sgemm = value;
    } else if (key == "pack_cache_mb") {  // (backends/c/packed_b_cache.h)
      absl::StatusOr<int64_t> mb = ParseInt("UOPC_C_PACK_CACHE_MB", value, 0, int64_t{1} << 30);
      if (!mb.ok())
        return absl::InvalidArgumentError(absl::StrCat("c plugin: ", mb.status().message()));
      PackedBCache::Get().SetCapacity(static_cast<uint64_t>(*mb) << 20);
    }
  }
#if defined(__x86_64__)
  const Target t = HostCpuTarget();
  g_l1d_bytes = t.l1d_bytes, g_l2_bytes = t.l2_bytes;
  // a 64 x 64 x 64 matmul and up: below it packing costs more than the tiles save
  const bool amx_on = amx && t.Has("amx_bf16") && t.Has("amx_tile") && AmxUsable();
  if (amx_on) {
    g_kernels.push_back(
        {"amx_bf16_to_f32", "matmul", DType::kBF16, DType::kBF16, DType::kF32, 1 << 19});
    g_kernels.push_back(
        {"amx_bf16_to_bf16", "matmul", DType::kBF16, DType::kBF16, DType::kBF16, 1 << 19});
  }
#endif
  if (blas == "openblas" && sgemm == "avx2")
    return absl::InvalidArgumentError(
        "c plugin: UOPC_C_BLAS=openblas and UOPC_C_SGEMM=avx2 each ask for the f32 matmul; "
        "choose one");
  if (blas == "openblas") {
    if (absl::Status s = OpenBlas(); !s.ok()) return s;
    g_kernels.push_back(
        {"openblas_sgemm", "matmul", DType::kF32, DType::kF32, DType::kF32, 1 << 19});
  }
#if defined(__x86_64__)
  // AVX2 without AVX-512 (where the generated kernels' tiles of 24 accumulators do as well)
  const bool avx2 = t.Has("avx2") && t.Has("fma");
  if (sgemm == "avx2" && !avx2)
    return absl::UnavailableError(
        absl::StrCat("c plugin: UOPC_C_SGEMM=avx2, but this CPU has no AVX2 and FMA (it has: ",
                     absl::StrJoin(t.features, " "), ")"));
  const bool avx2_on = sgemm == "avx2" || (sgemm == "auto" && avx2 && !t.Has("avx512f"));
  if (avx2_on && (sgemm == "avx2" || blas == "none"))  // (an asked-for OpenBLAS keeps f32)
    g_kernels.push_back({"avx2_sgemm", "matmul", DType::kF32, DType::kF32, DType::kF32, 1 << 19});
  if (avx2_on && !amx_on) {  // bf16 where no AMX multiplies it (converted as packed)
    g_kernels.push_back(
        {"avx2_bf16_to_f32", "matmul", DType::kBF16, DType::kBF16, DType::kF32, 1 << 19});
    g_kernels.push_back(
        {"avx2_bf16_to_bf16", "matmul", DType::kBF16, DType::kBF16, DType::kBF16, 1 << 19});
  }
#endif
  return absl::OkStatus();
}

}  // namespace

absl::Status ConfigureMatmulKernels(absl::Span<const std::pair<std::string, std::string>> options) {
  std::call_once(g_once, [&] { g_status = Configure(options); });
  return g_status;
}

absl::Span<const SuppliedKernel> MatmulKernels() { return g_kernels; }

const SuppliedKernel* FindMatmulKernel(const char* name) {
  for (const SuppliedKernel& k : g_kernels)
    if (name && k.name == name) return &k;
  return nullptr;
}

std::vector<SuppliedKernel> EmulatedGpuKernels(absl::string_view arch) {
  int number = 0;
  if (!EnvBool("UOPC_CUDA_KERNELS", true) || !absl::ConsumePrefix(&arch, "sm_") ||
      !absl::SimpleAtoi(arch, &number))
    return {};
  return cuda::MatmulKernels(number);
}

absl::Status RunMatmulKernel(const char* name, const MatmulParams& p, void* out, const void* a,
                             const void* b, BufferVersion b_version) {
  const absl::string_view n = name ? name : "";
  if (!FindMatmulKernel(name))
    return absl::NotFoundError(absl::StrCat("c plugin: no supplied kernel '", n, "'"));
  if (p.batch2 == 0 || p.batch == 0 || p.m == 0 || p.n == 0) return absl::OkStatus();
  const MatmulParams q = Unbatched(p);
  if (n == "openblas_sgemm")
    return RunSgemm(q, static_cast<float*>(out), static_cast<const float*>(a),
                    static_cast<const float*>(b));
#if defined(__x86_64__)
  if (n == "amx_bf16_to_f32" || n == "amx_bf16_to_bf16")
    return RunAmx(q, out, n == "amx_bf16_to_bf16", static_cast<const uint16_t*>(a),
                  static_cast<const uint16_t*>(b));
  if (n == "avx2_sgemm" || n == "avx2_bf16_to_f32" || n == "avx2_bf16_to_bf16")
    return RunAvx2Sgemm(q, out, n == "avx2_bf16_to_bf16", a, b, n != "avx2_sgemm", b_version,
                        g_l1d_bytes, g_l2_bytes);
#endif
  return absl::InternalError(absl::StrCat("c plugin: kernel '", n, "' has no code"));
}

}  // namespace uopc::cpu
