// The CPU's own arithmetic peaks, per core, that every CPU kernel is measured against: the
// f32 FMA (vfmadd231ps, 16 lanes with AVX-512, else 8 with AVX2) and, where the CPU has
// AVX512-BF16, the bf16 pair dot product (vdpbf16ps: 32 bf16 products summed into 16 f32
// lanes). Twelve independent accumulators hide each instruction's latency, so what is
// timed is its throughput. GFLOP/s counts 2 a multiply-add.
//   bazel run -c opt //bench:isa_peak_bench
// What it showed (Intel Xeon, family 6 model 207, no AMX exposed; issue 29): vfmadd231ps
// about 2 a cycle (150 GFLOP/s), vdpbf16ps 0.5 a cycle (60 GFLOP/s): on this CPU a bf16
// matmul sums faster with f32 FMAs after converting its operands, so the C backend does so.
#include <immintrin.h>

#include <benchmark/benchmark.h>

namespace {

constexpr int64_t kSteps = 1 << 20;  // instructions per accumulator per iteration

#define UOPC_TIMES12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

__attribute__((target("avx512f"))) void Fma512(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) return state.SkipWithError("no AVX-512 on this CPU");
#define UOPC_DECL(i) __m512 a##i = _mm512_set1_ps(i);
  UOPC_TIMES12(UOPC_DECL)
  __m512 x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(1e-7f);
  for (auto _ : state) {
    for (int64_t s = 0; s < kSteps; ++s) {
#define UOPC_FMA(i) a##i = _mm512_fmadd_ps(x, y, a##i);
      UOPC_TIMES12(UOPC_FMA)
      __asm__ volatile("" : "+v"(x));  // (no hoisting across steps)
    }
  }
#define UOPC_USE(i) benchmark::DoNotOptimize(a##i);
  UOPC_TIMES12(UOPC_USE)
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * 16 * 12 * kSteps * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(Fma512)->Name("BM_F32Fma512")->UseRealTime();

__attribute__((target("avx2,fma"))) void Fma256(benchmark::State& state) {
  if (!__builtin_cpu_supports("fma")) return state.SkipWithError("no FMA on this CPU");
#define UOPC_DECL256(i) __m256 a##i = _mm256_set1_ps(i);
  UOPC_TIMES12(UOPC_DECL256)
  __m256 x = _mm256_set1_ps(1.0f), y = _mm256_set1_ps(1e-7f);
  for (auto _ : state) {
    for (int64_t s = 0; s < kSteps; ++s) {
#define UOPC_FMA256(i) a##i = _mm256_fmadd_ps(x, y, a##i);
      UOPC_TIMES12(UOPC_FMA256)
      __asm__ volatile("" : "+x"(x));
    }
  }
  UOPC_TIMES12(UOPC_USE)
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * 8 * 12 * kSteps * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(Fma256)->Name("BM_F32Fma256")->UseRealTime();

__attribute__((target("avx512f,avx512bf16"))) void DotBf16(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512bf16")) return state.SkipWithError("no AVX512-BF16 on this CPU");
  UOPC_TIMES12(UOPC_DECL)
  __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80), y = x;
  for (auto _ : state) {
    for (int64_t s = 0; s < kSteps; ++s) {
#define UOPC_DOT(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
      UOPC_TIMES12(UOPC_DOT)
      __asm__ volatile("" : "+v"(x));
    }
  }
  UOPC_TIMES12(UOPC_USE)
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * 32 * 12 * kSteps * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(DotBf16)->Name("BM_Bf16Dot512")->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
