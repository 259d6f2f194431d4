// A GPT training step (forward, backward, AdamW) of the model of the issue: 4 layers, dim
// 128, 4 heads, context 64, batch 16, vocabulary 65 (and GPT-2's 50,257). The peer is PyTorch's CPU eager step
// on the same model, measured by bench/pytorch_gpt_step.py on the same machine.
//   bazel run -c opt //bench:gpt_bench
#include <optional>

#include <benchmark/benchmark.h>

#include "frontend/autocast.h"
#include "frontend/captured_step.h"
#include "frontend/nn.h"
#include "frontend/optim.h"

namespace uopc {
namespace {

// Steps of the model with a vocabulary of `vocab` tokens, its matmuls in `precision`
// (autocast: frontend/autocast.h); `captured`: the step's plan run again without building
// its graph (frontend/captured_step.h), as gpt_train runs its steps.
void TrainSteps(benchmark::State& state, int64_t vocab, DType precision = DType::kF32,
                bool captured = false) {
  const Autocast policy(precision);
  constexpr int64_t B = 16, T = 64;
  Tensor::ManualSeed(0);
  GptConfig c{vocab, T, 128, 4, 4, 0.0};
  Gpt model(c);
  AdamW opt(model.Parameters(), 1e-3);
  std::vector<int32_t> xs(B * T), ys(B * T);
  for (int64_t i = 0; i < B * T; ++i)
    xs[i] = static_cast<int32_t>(i % vocab), ys[i] = static_cast<int32_t>((i * 7) % vocab);
  // (inputs: the batch, then the optimizer's values of the step)
  auto eager = [&](const std::vector<Tensor>& in) {
    Tensor loss = model.Forward(in[0]).Reshape({B * T, vocab}).CrossEntropy(in[1]);
    loss.Backward();
    opt.Step(std::vector<Tensor>(in.begin() + 2, in.end()), {&loss});
    return std::vector<Tensor>{loss};
  };
  auto inputs = [&] {
    std::vector<Tensor> in{Tensor::FromVector(xs, {B, T}), Tensor::FromVector(ys, {B * T})},
        values = opt.NextValues();
    in.insert(in.end(), values.begin(), values.end());
    return in;
  };
  std::vector<Tensor*> held = model.Parameters(), moments = opt.State();
  held.insert(held.end(), moments.begin(), moments.end());
  eager(inputs());  // compiles
  std::optional<CapturedStep> replay;
  if (captured) {
    std::vector<Tensor> out;
    absl::StatusOr<CapturedStep> c = CapturedStep::CaptureUpdate(eager, inputs(), held, &out);
    if (!c.ok()) return state.SkipWithError(std::string(c.status().message()).c_str());
    replay = *std::move(c);
  }
  for (auto _ : state) replay ? replay->Run(inputs()) : eager(inputs());
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(B * T) * state.iterations(),
                                                  benchmark::Counter::kIsRate);
}

void BM_GptTrainStep(benchmark::State& state) { TrainSteps(state, 65); }
BENCHMARK(BM_GptTrainStep)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);

// The same model with GPT-2's vocabulary: the output projection and the loss dominate; the
// embedding reads one row per token (UOPC_DEBUG=2 shows each kernel's time with its loops).
void BM_GptTrainStepBf16(benchmark::State& state) { TrainSteps(state, 65, DType::kBF16); }
BENCHMARK(BM_GptTrainStepBf16)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);

void BM_GptTrainStepCaptured(benchmark::State& state) { TrainSteps(state, 65, DType::kF32, true); }
BENCHMARK(BM_GptTrainStepCaptured)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);

void BM_GptTrainStepBf16Captured(benchmark::State& state) {
  TrainSteps(state, 65, DType::kBF16, true);
}
BENCHMARK(BM_GptTrainStepBf16Captured)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);

void BM_GptTrainStepGpt2Vocabulary(benchmark::State& state) { TrainSteps(state, 50257); }
BENCHMARK(BM_GptTrainStepGpt2Vocabulary)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace uopc

BENCHMARK_MAIN();
