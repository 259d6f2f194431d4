// Many generations at once against one at a time, on the bench GPT (4 layers, dim 128, 4
// heads, context 64, vocabulary 65): the same 32 greedy requests (prompts of 8-32 tokens,
// 8-32 new tokens each) served by a ContinuousBatcher with up to 1, 8 or 32 sequences
// running, and by Generate one after another (the captured single-sequence decode); and
// 128 such requests 32 at a time, which keeps the batch near full (what a service with 32
// requests in flight sees: 32 alone drain, fewer running as each finishes). Counters:
// generated tokens a second, and the mean time of one step (a decoded token's
// latency: every running sequence gets one token a step). The peer, PyTorch eager decoding
// the same requests batched over a padded KV cache, is bench/pytorch_gpt_batch_decode.py.
//   bazel run -c opt //bench:batch_decode_bench
#include <chrono>

#include <benchmark/benchmark.h>

#include "bench/bench_gpt.h"
#include "frontend/continuous_batcher.h"
#include "frontend/generate.h"
#include "frontend/nn.h"

namespace uopc {
namespace {

struct Request {
  std::vector<int64_t> prompt;
  GenerateOptions options;
};

// `n` requests: prompts of 8-32 tokens and 8-32 new ones, by a formula that the peer
// repeats.
std::vector<Request> Requests(int64_t n = 32) {
  std::vector<Request> r(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = 0; t < 8 + (i * 7) % 25; ++t)
      r[i].prompt.push_back((i * 31 + t * 7) % kBenchGpt.vocab);
    r[i].options.max_tokens = 8 + (i * 11) % 25;
    r[i].options.temperature = 0;
  }
  return r;
}

int64_t TokensOf(const std::vector<Request>& r) {
  int64_t n = 0;
  for (const Request& q : r) n += q.options.max_tokens;
  return n;
}

// Args: how many sequences run at once, how many requests are submitted (32: the batch
// drains, fewer running as each finishes; 128 at 32: about 32 running most of the time).
void BM_Batched(benchmark::State& state) {
  const std::vector<Request> requests = Requests(state.range(1));
  ContinuousBatcher batcher(BenchGpt(), {.max_sequences = state.range(0), .step_tokens = 64});
  for (const Request& q : requests) batcher.Submit(q.prompt, q.options);
  batcher.Run();  // (compiles the step)
  const int64_t steps = batcher.stats().steps;
  double seconds = 0;
  for (auto _ : state) {
    for (const Request& q : requests) batcher.Submit(q.prompt, q.options);
    auto start = std::chrono::steady_clock::now();
    batcher.Run();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double runs = static_cast<double>(state.iterations());
  state.counters["tokens/s"] = TokensOf(requests) * runs / seconds;
  state.counters["ms/step"] = 1e3 * seconds / static_cast<double>(batcher.stats().steps - steps);
  state.counters["preemptions"] = static_cast<double>(batcher.stats().preemptions);
  state.counters["plans built"] = static_cast<double>(batcher.stats().plans_built);
}

void BM_OneAtATime(benchmark::State& state) {
  const std::vector<Request> requests = Requests();
  Generate(BenchGpt(), requests[0].prompt, requests[0].options);  // (compiles)
  int64_t decoded = 0;
  for (auto _ : state)
    for (const Request& q : requests)
      decoded += static_cast<int64_t>(Generate(BenchGpt(), q.prompt, q.options).tokens.size());
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(decoded), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Batched)
    ->Args({1, 32})
    ->Args({8, 32})
    ->Args({32, 32})
    ->Args({32, 128})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_OneAtATime)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace uopc

BENCHMARK_MAIN();
