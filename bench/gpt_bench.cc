// A GPT training step (forward, backward, AdamW) of the model of the issue: 4 layers, dim
// 128, 4 heads, context 64, batch 16, vocabulary 65 (and GPT-2's 50,257). The peer is PyTorch's CPU eager step
// on the same model, measured by bench/pytorch_gpt_step.py on the same machine.
//   bazel run -c opt //bench:gpt_bench
#include <benchmark/benchmark.h>

#include "frontend/autocast.h"
#include "frontend/nn.h"
#include "frontend/optim.h"

namespace uopc {
namespace {

// Steps of the model with a vocabulary of `vocab` tokens, its matmuls in `precision`
// (autocast: frontend/autocast.h).
void TrainSteps(benchmark::State& state, int64_t vocab, DType precision = DType::kF32) {
  const Autocast policy(precision);
  constexpr int64_t B = 16, T = 64;
  Tensor::ManualSeed(0);
  GptConfig c{vocab, T, 128, 4, 4, 0.0};
  Gpt model(c);
  AdamW opt(model.Parameters(), 1e-3);
  std::vector<int32_t> xs(B * T), ys(B * T);
  for (int64_t i = 0; i < B * T; ++i)
    xs[i] = static_cast<int32_t>(i % vocab), ys[i] = static_cast<int32_t>((i * 7) % vocab);
  auto step = [&] {
    Tensor loss = model.Forward(Tensor::FromVector(xs, {B, T}))
                      .Reshape({B * T, vocab})
                      .CrossEntropy(Tensor::FromVector(ys, {B * T}));
    loss.Backward();
    opt.Step({&loss});
  };
  step();  // compiles
  for (auto _ : state) step();
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(B * T) * state.iterations(),
                                                  benchmark::Counter::kIsRate);
}

void BM_GptTrainStep(benchmark::State& state) { TrainSteps(state, 65); }
BENCHMARK(BM_GptTrainStep)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);

// The same model with GPT-2's vocabulary: the output projection and the loss dominate; the
// embedding reads one row per token (UOPC_DEBUG=2 shows each kernel's time with its loops).
void BM_GptTrainStepBf16(benchmark::State& state) { TrainSteps(state, 65, DType::kBF16); }
BENCHMARK(BM_GptTrainStepBf16)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);

void BM_GptTrainStepGpt2Vocabulary(benchmark::State& state) { TrainSteps(state, 50257); }
BENCHMARK(BM_GptTrainStepGpt2Vocabulary)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace uopc

BENCHMARK_MAIN();
