// A GPT training step (forward, backward, AdamW) of the model of the issue: 4 layers, dim
// 128, 4 heads, context 64, batch 16, vocabulary 65. The peer is PyTorch's CPU eager step
// on the same model, measured by bench/pytorch_gpt_step.py on the same machine.
//   bazel run -c opt //bench:gpt_bench
#include <benchmark/benchmark.h>

#include "frontend/nn.h"
#include "frontend/optim.h"

namespace uopc {
namespace {

void BM_GptTrainStep(benchmark::State& state) {
  constexpr int64_t B = 16, T = 64;
  Tensor::ManualSeed(0);
  GptConfig c{65, T, 128, 4, 4, 0.0};
  Gpt model(c);
  AdamW opt(model.Parameters(), 1e-3);
  std::vector<int32_t> xs(B * T), ys(B * T);
  for (int64_t i = 0; i < B * T; ++i)
    xs[i] = static_cast<int32_t>(i % 65), ys[i] = static_cast<int32_t>((i * 7) % 65);
  auto step = [&] {
    Tensor loss = model.Forward(Tensor::FromVector(xs, {B, T}))
                      .Reshape({B * T, 65})
                      .CrossEntropy(Tensor::FromVector(ys, {B * T}));
    loss.Backward();
    opt.Step({&loss});
  };
  step();  // compiles
  for (auto _ : state) step();
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(B * T) * state.iterations(),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_GptTrainStep)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);

}  // namespace
}  // namespace uopc

BENCHMARK_MAIN();
