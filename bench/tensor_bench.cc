// Speed of the Tensor path, next to plain C++ and memcpy in the same run: a large
// elementwise add (against memcpy bandwidth), a row reduction and a 512x512 matmul
// (against plain loops), and the time to build the plan of a 2-layer GPT-sized forward
// graph, cold and from the plan cache.
//   bazel run -c opt //bench:tensor_bench
#include <cmath>
#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>

#include "frontend/realize.h"
#include "frontend/tensor.h"

namespace uopc {
namespace {

constexpr int64_t kN = 1 << 24;  // 16M floats, 64 MiB per array

void BM_Memcpy(benchmark::State& state) {
  std::vector<float> a(kN, 1.0f), b(kN);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), kN * sizeof(float));
    benchmark::ClobberMemory();
  }
  state.counters["traffic_GB/s"] =
      benchmark::Counter(2.0 * kN * 4 * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PlainLoopAdd(benchmark::State& state) {
  std::vector<float> a(kN, 1.0f), b(kN, 2.0f), c(kN);
  for (auto _ : state) {
    for (int64_t i = 0; i < kN; ++i) c[i] = a[i] + b[i];
    benchmark::ClobberMemory();
  }
  state.counters["traffic_GB/s"] =
      benchmark::Counter(3.0 * kN * 4 * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PlainLoopAdd)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TensorAdd(benchmark::State& state) {
  Tensor a = Tensor::Full({kN}, 1.0).Realize(), b = Tensor::Full({kN}, 2.0).Realize();
  (a + b).Realize();  // compile once
  for (auto _ : state) {
    Tensor c = (a + b).Realize();
    benchmark::DoNotOptimize(c.data().get());
  }
  state.counters["traffic_GB/s"] =
      benchmark::Counter(3.0 * kN * 4 * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TensorAdd)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int64_t kRows = 4096, kCols = 4096;

void BM_PlainLoopRowSum(benchmark::State& state) {
  std::vector<float> x(kRows * kCols, 1.0f), out(kRows);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r) {
      float s = 0;
      for (int64_t c = 0; c < kCols; ++c) s += x[r * kCols + c];
      out[r] = s;
    }
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_PlainLoopRowSum)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TensorRowSum(benchmark::State& state) {
  Tensor x = Tensor::Full({kRows, kCols}, 1.0).Realize();
  x.Sum({1}).Realize();
  for (auto _ : state) benchmark::DoNotOptimize(x.Sum({1}).Realize().data().get());
}
BENCHMARK(BM_TensorRowSum)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int64_t kM = 512;

void BM_PlainLoopMatmul512(benchmark::State& state) {
  std::vector<float> a(kM * kM, 0.5f), b(kM * kM, 0.25f), c(kM * kM);
  for (auto _ : state) {
    std::fill(c.begin(), c.end(), 0.0f);
    for (int64_t i = 0; i < kM; ++i)
      for (int64_t k = 0; k < kM; ++k)
        for (int64_t j = 0; j < kM; ++j) c[i * kM + j] += a[i * kM + k] * b[k * kM + j];
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kM * kM * kM * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PlainLoopMatmul512)->Unit(benchmark::kMillisecond)->UseRealTime();

// An n x n matmul in `dtype` (bf16: bf16 operands, f32 sums, a bf16 result; the kernel
// converts as it loads and sums with f32 FMAs, the fastest on a CPU without AMX: see
// ../shared/notes or the issue note on vdpbf16ps), timed as GFLOP/s.
void Matmul(benchmark::State& state, DType dtype) {
  const int64_t n = state.range(0);
  Tensor a = Tensor::Full({n, n}, 0.5, dtype).Realize(),
         b = Tensor::Full({n, n}, 0.25, dtype).Realize();
  a.Matmul(b).Realize();
  for (auto _ : state) benchmark::DoNotOptimize(a.Matmul(b).Realize().data().get());
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
}
void BM_TensorMatmul(benchmark::State& state) { Matmul(state, DType::kF32); }
BENCHMARK(BM_TensorMatmul)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_TensorMatmulBf16(benchmark::State& state) { Matmul(state, DType::kBF16); }
BENCHMARK(BM_TensorMatmulBf16)->Arg(512)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

// A 2-layer GPT forward (vocab 65, context 64, dim 128, 4 heads, batch 16), built from
// Tensor ops.
Tensor GptForward() {
  constexpr int64_t B = 16, T = 64, C = 128, H = 4, V = 65, L = 2;
  Tensor::ManualSeed(1);
  auto W = [](int64_t a, int64_t b) { return Tensor::Randn({a, b}) * 0.02; };
  auto norm = [](const Tensor& x) {
    Tensor m = x.Mean({-1}, true), v = (x - m).Square().Mean({-1}, true);
    return (x - m) * (v + 1e-5).Rsqrt();
  };
  Tensor idx = Tensor::Randint(0, V, {B, T});
  Tensor x = idx.OneHot(V).Float().Matmul(W(V, C)) + W(T, C);
  Tensor mask =
      Tensor::Arange(T).Unsqueeze(1).Lt(Tensor::Arange(T)).Where(-1e9, Tensor::Zeros({T, T}));
  for (int l = 0; l < L; ++l) {
    Tensor h = norm(x);
    Tensor q = h.Matmul(W(C, C)).Reshape({B, T, H, C / H}).Transpose(1, 2);
    Tensor k = h.Matmul(W(C, C)).Reshape({B, T, H, C / H}).Transpose(1, 2);
    Tensor v = h.Matmul(W(C, C)).Reshape({B, T, H, C / H}).Transpose(1, 2);
    Tensor att = (q.Matmul(k.Transpose()) * (1.0 / std::sqrt(C / H)) + mask).Softmax(-1);
    x = x + att.Matmul(v).Transpose(1, 2).Reshape({B, T, C}).Matmul(W(C, C));
    x = x + norm(x).Matmul(W(C, 4 * C)).Gelu().Matmul(W(4 * C, C));
  }
  return norm(x).Matmul(W(C, V));
}

void BM_PlanBuildGpt2LayerCold(benchmark::State& state) {
  Tensor logits = GptForward();
  size_t kernels = 0;
  for (auto _ : state) {
    Runtime::Get().plans().Clear();
    kernels = (*Runtime::Get().PlanFor({logits.data()}))->kernels().size();
  }
  state.counters["kernels"] = static_cast<double>(kernels);
}
BENCHMARK(BM_PlanBuildGpt2LayerCold)->Unit(benchmark::kMillisecond);

void BM_PlanBuildGpt2LayerCached(benchmark::State& state) {
  Tensor logits = GptForward();
  (void)Runtime::Get().PlanFor({logits.data()});
  for (auto _ : state) benchmark::DoNotOptimize(Runtime::Get().PlanFor({logits.data()}));
}
BENCHMARK(BM_PlanBuildGpt2LayerCached)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace uopc

BENCHMARK_MAIN();
