// The CUDA device next to its peers (bench/pytorch_cuda_peers.py measures those on the same
// GPU): an elementwise add of two 64M-f32 tensors (bandwidth), the sums of 1,024 rows of
// 4,096 (a reduction across each block's threads), an empty kernel launched
// through the plugin ABI against the same kernel launched with cuLaunchKernel directly
// (measured alternately in one run), f32 matmuls of 1024 and 4096, a bf16 one of 4096, and the
// training step of the CPU bench's GPT. Every benchmark is skipped, saying why, where there is no
// GPU.
//   bazel run -c opt //bench:cuda_bench
#include <chrono>

#include <benchmark/benchmark.h>

#include "backends/cuda/driver.h"
#include "backends/cuda/nvrtc.h"
#include "core/serialize.h"
#include "devices/kernel_cache.h"
#include "devices/registry.h"
#include "frontend/nn.h"
#include "frontend/optim.h"

namespace uopc {
namespace {

using Clock = std::chrono::steady_clock;

Device* Gpu(benchmark::State& state) {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice("CUDA:0");
  if (!d.ok()) state.SkipWithError(std::string(d.status().message()).c_str());
  return d.ok() ? *d : nullptr;
}

void BM_ElementwiseAdd64M(benchmark::State& state) {
  if (!Gpu(state)) return;
  const int64_t n = 64 << 20;
  Tensor a = Tensor::Rand({n}, DType::kF32, "CUDA:0").Realize(),
         b = Tensor::Rand({n}, DType::kF32, "CUDA:0").Realize();
  (a + b).Realize();  // compiles
  for (auto _ : state) (a + b).Realize();
  state.counters["TB/s"] = benchmark::Counter(3.0 * n * 4 * state.iterations() / 1e12,
                                              benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ElementwiseAdd64M)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The sums of 1,024 rows of 4,096 f32 (16 MiB read): fewer rows than an H100's
// multiprocessors times its warp, so each row is a block's (passes/block_reduce.h).
void BM_RowSums1024x4096(benchmark::State& state) {
  if (!Gpu(state)) return;
  const int64_t rows = 1024, cols = 4096;
  Tensor x = Tensor::Rand({rows, cols}, DType::kF32, "CUDA:0").Realize();
  x.Sum({1}).Realize();  // compiles
  for (auto _ : state) x.Sum({1}).Realize();
  state.counters["TB/s"] = benchmark::Counter(1.0 * rows * cols * 4 * state.iterations() / 1e12,
                                              benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RowSums1024x4096)->Unit(benchmark::kMicrosecond)->UseRealTime();

// An empty kernel: through the ABI (Device::Launch, then its event) against cuLaunchKernel
// and cuStreamSynchronize on the same function, alternately.
void BM_EmptyLaunchThroughTheABI(benchmark::State& state) {
  Device* d = Gpu(state);
  if (!d) return;
  UOp k = UOp::Sink({});
  std::string src = d->Render(SerializeGraph(k), "empty")->source;
  std::shared_ptr<Program> prog = *d->Build({src}, {"empty"});
  // the baseline: the same empty kernel, compiled and loaded by hand on device 0
  const cuda::Driver& drv = **cuda::Driver::Load();
  cuda::CUdevice dev = 0;
  cuda::CUcontext ctx = nullptr;
  int major = 0, minor = 0;
  drv.DeviceGet(&dev, 0);
  drv.DevicePrimaryCtxRetain(&ctx, dev);
  drv.CtxSetCurrent(ctx);
  drv.DeviceGetAttribute(&major, cuda::kAttrCcMajor, dev);
  drv.DeviceGetAttribute(&minor, cuda::kAttrCcMinor, dev);
  absl::StatusOr<Nvrtc::Binary> bin = (*Nvrtc::Load())->Compile(
      "extern \"C\" __global__ void empty() {}", major * 10 + minor, {});
  std::string image = bin->bytes + '\0';
  cuda::CUmodule module = nullptr;
  cuda::CUfunction fn = nullptr;
  drv.ModuleLoadData(&module, image.data());
  drv.ModuleGetFunction(&fn, module, "empty");
  cuda::CUstream stream = nullptr;
  drv.StreamCreate(&stream, cuda::kStreamNonBlocking);
  double abi = 0, raw = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    (void)d->Launch(*prog, 0, {}, {})->Wait();
    auto t1 = Clock::now();
    drv.CtxSetCurrent(ctx);
    drv.LaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr);
    drv.StreamSynchronize(stream);
    auto t2 = Clock::now();
    abi += std::chrono::duration<double, std::micro>(t1 - t0).count();
    raw += std::chrono::duration<double, std::micro>(t2 - t1).count();
  }
  state.counters["abi_us"] = abi / state.iterations();
  state.counters["raw_us"] = raw / state.iterations();
  state.counters["abi/raw"] = abi / raw;
}
BENCHMARK(BM_EmptyLaunchThroughTheABI)->Unit(benchmark::kMicrosecond);

void BM_Matmul(benchmark::State& state) {
  if (!Gpu(state)) return;
  const int64_t n = state.range(0);
  Tensor a = Tensor::Rand({n, n}, DType::kF32, "CUDA:0").Realize(),
         b = Tensor::Rand({n, n}, DType::kF32, "CUDA:0").Realize();
  a.Matmul(b).Realize();
  for (auto _ : state) a.Matmul(b).Realize();
  state.counters["TFLOP/s"] = benchmark::Counter(2.0 * n * n * n * state.iterations() / 1e12,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Matmul)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// bf16 operands, f32 sums, a bf16 result (autocast's matmul; PyTorch's peer: cuBLAS bf16)
void BM_MatmulBf16(benchmark::State& state) {
  if (!Gpu(state)) return;
  const int64_t n = state.range(0);
  Tensor a = Tensor::Rand({n, n}, DType::kF32, "CUDA:0").Cast(DType::kBF16).Realize(),
         b = Tensor::Rand({n, n}, DType::kF32, "CUDA:0").Cast(DType::kBF16).Realize();
  a.Matmul(b).Realize();
  for (auto _ : state) a.Matmul(b).Realize();
  state.counters["TFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations() / 1e12, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MatmulBf16)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GptTrainStep(benchmark::State& state) {
  if (!Gpu(state)) return;
  constexpr int64_t B = 16, T = 64;
  Tensor::ManualSeed(0);
  Gpt model(GptConfig{65, T, 128, 4, 4, 0.0});
  model.To("CUDA:0");
  AdamW opt(model.Parameters(), 1e-3);
  std::vector<int32_t> xs(B * T), ys(B * T);
  for (int64_t i = 0; i < B * T; ++i)
    xs[i] = static_cast<int32_t>(i % 65), ys[i] = static_cast<int32_t>((i * 7) % 65);
  auto step = [&] {
    Tensor loss = model.Forward(Tensor::FromVector(xs, {B, T}, DType::kI32, "CUDA:0"))
                      .Reshape({B * T, 65})
                      .CrossEntropy(Tensor::FromVector(ys, {B * T}, DType::kI32, "CUDA:0"));
    loss.Backward();
    opt.Step({&loss});
  };
  step();
  for (auto _ : state) step();
}
BENCHMARK(BM_GptTrainStep)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace uopc

BENCHMARK_MAIN();
