// Decoding one token of the bench GPT (4 layers, dim 128, 4 heads, context 64, vocabulary
// 65) at positions 8, 32 and 56: with the KV cache (the token's keys and values written in
// place, attention over the cached positions), the graph built each step or the step
// captured and run again (as Generate does), and without the cache (the whole prefix
// recomputed, one plan for every length). The cost with the cache follows the position; without it, the
// prefix. The peer, PyTorch CPU eager on the same model without a cache, is
// bench/pytorch_gpt_decode.py, run alternately with this program.
//   bazel run -c opt //bench:decode_bench
#include <benchmark/benchmark.h>

#include "bench/bench_gpt.h"
#include "frontend/captured_step.h"
#include "frontend/nn.h"
#include "frontend/realize.h"

namespace uopc {
namespace {

std::vector<int32_t> Prefix(int64_t n) {
  std::vector<int32_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>((i * 7 + 3) % kBenchGpt.vocab);
  return v;
}

void BM_DecodeWithCache(benchmark::State& state) {
  const int64_t pos = state.range(0);
  Gpt& model = BenchGpt();
  KvCache cache(model);
  SymInt T = SymInt::Variable("T", 1, kBenchGpt.context, pos);
  model.Forward(Tensor::FromVector(Prefix(pos), {1, T}), &cache).Realize();  // the prefill
  const size_t plans = Runtime::Get().plans().size();
  std::vector<int32_t> token = {5};
  for (auto _ : state) {
    cache.Rewind(pos);
    std::vector<float> logits =
        model.Forward(Tensor::FromVector(token, {1, 1}), &cache).ToVector<float>();
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["new plans"] = static_cast<double>(Runtime::Get().plans().size() - plans);
}

// What Generate does: the first decode step captured, the next ones run again with the
// token and the position (no graph built).
void BM_DecodeCaptured(benchmark::State& state) {
  const int64_t pos = state.range(0);
  Gpt& model = BenchGpt();
  KvCache cache(model);
  SymInt T = SymInt::Variable("T", 1, kBenchGpt.context, pos);
  model.Forward(Tensor::FromVector(Prefix(pos), {1, T}), &cache).Realize();
  std::vector<Tensor> out;
  Tensor token = Tensor::FromVector(std::vector<int32_t>{5}, {1, 1});
  CapturedStep step(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{model.Forward(in[0], &cache)};
      },
      {token}, &out);
  for (auto _ : state) {
    Tensor next = Tensor::FromVector(std::vector<int32_t>{5}, {1, 1});
    std::vector<float> logits = step.Run({next}, {{"pos", pos}})[0].ToVector<float>();
    benchmark::DoNotOptimize(logits.data());
  }
}

void BM_DecodeWithoutCache(benchmark::State& state) {
  const int64_t pos = state.range(0);
  Gpt& model = BenchGpt();
  std::vector<int32_t> prefix = Prefix(pos + 1);
  SymInt T = SymInt::Variable("T", 1, kBenchGpt.context, pos + 1);
  for (auto _ : state) {
    std::vector<float> logits = model.Forward(Tensor::FromVector(prefix, {1, T}))
                                    .Slice(1, T - 1, T)
                                    .ToVector<float>();
    benchmark::DoNotOptimize(logits.data());
  }
}

BENCHMARK(BM_DecodeWithCache)->Arg(8)->Arg(32)->Arg(56)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_DecodeCaptured)->Arg(8)->Arg(32)->Arg(56)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_DecodeWithoutCache)->Arg(8)->Arg(32)->Arg(56)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace uopc

BENCHMARK_MAIN();
