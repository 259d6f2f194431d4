// EMU:0 (UOPC_CPU_EMULATE=sm_90, from the BUILD rule): a device of the C plugin whose
// kernels are an H100's, lowered for sm_90 (blocks of threads, no CPU register tiles) and
// run on this CPU. A program, a GPT's training steps and a generation give there what they
// give on CPU:0: the same kernels' arithmetic, summed in another order where the GPU's
// lowering splits a reduction. Its target lists the kernels the CUDA plugin supplies there,
// so its matmuls become the same calls; it runs them as the reference does.
#include <cstdio>
#include <functional>
#include <optional>

#include <gtest/gtest.h>

#include "backends/cuda/gpu_target.h"
#include "backends/cuda/matmul_kernels.h"
#include "devices/registry.h"
#include "frontend/autocast.h"
#include "frontend/generate.h"
#include "frontend/nn.h"
#include "frontend/optim.h"
#include "frontend/realize.h"

namespace uopc {
namespace {

constexpr const char* kEmu = "EMU:0";

// Whether any kernel the runs recorded is split over threads of blocks (a LOCAL range).
bool AnyKernelHasThreads(const std::vector<Runtime::PlanRun>& runs) {
  for (const Runtime::PlanRun& r : runs)
    for (const Plan::Kernel* k : r.plan->kernels())
      for (const UOp& u : k->ast.Toposort())
        if (u.is(Ops::RANGE) && u.arg().Get<RangeArg>().kind == RangeKind::kLocal) return true;
  return false;
}

// The supplied-kernel calls (MATMULs) in the plans the runs recorded.
int MatmulCalls(const std::vector<Runtime::PlanRun>& runs) {
  int calls = 0;
  for (const Runtime::PlanRun& r : runs)
    for (const Plan::Kernel* k : r.plan->kernels())
      for (const UOp& u : k->ast.Toposort()) calls += u.is(Ops::MATMUL);
  return calls;
}

TEST(EmulatedGpu, ItIsADeviceWithItsGpusTarget) {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice(kEmu);
  ASSERT_TRUE(d.ok()) << d.status();
  Target gpu = *NamedGpuTarget("sm_90");
  gpu.kernels = cuda::MatmulKernels(90);
  EXPECT_EQ((*d)->target(), gpu);
  EXPECT_EQ((*d)->type(), UOPC_DEVICE_ACCEL);  // host memory, but not a CPU's kernels
  EXPECT_EQ((*d)->kind().rfind("sm_90 emulated on ", 0), 0u) << (*d)->kind();
}

// A bf16 matmul becomes the call the GPU would make (cuda_mma_bf16_to_bf16), with the CPU's
// result: both sum in f32 and round once.
TEST(EmulatedGpu, MatmulsAreTheGpusSuppliedKernels) {
  auto program = [](const char* device) {
    Tensor::ManualSeed(5);
    Tensor a = Tensor::Randn({96, 128}, DType::kF32, device).Cast(DType::kBF16).Realize();
    Tensor b = Tensor::Randn({128, 80}, DType::kF32, device).Cast(DType::kBF16).Realize();
    return a.Matmul(b).Realize().Float();
  };
  std::vector<Runtime::PlanRun> runs;
  Runtime::Get().Record(&runs);
  std::vector<float> emu = program(kEmu).ToVector<float>();
  Runtime::Get().Record(nullptr);
  EXPECT_EQ(MatmulCalls(runs), 1);
  std::vector<float> cpu = program("CPU:0").ToVector<float>();
  ASSERT_EQ(emu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i)  // (within a bf16 rounding: sums in other orders)
    EXPECT_NEAR(emu[i], cpu[i], 1e-2f * std::max(1.0f, std::abs(cpu[i]))) << i;
}

TEST(EmulatedGpu, AProgramRunsInBlocksOfThreadsWithTheCpusResult) {
  auto program = [](const char* device) {
    Tensor::ManualSeed(3);
    Tensor a = Tensor::Randn({48, 80}, DType::kF32, device);
    Tensor b = Tensor::Randn({80, 24}, DType::kF32, device);
    return (a.Matmul(b).Relu().Softmax(-1) * 3.0).Sum({0});
  };
  std::vector<Runtime::PlanRun> runs;
  Runtime::Get().Record(&runs);
  std::vector<float> emu = program(kEmu).ToVector<float>();
  Runtime::Get().Record(nullptr);
  EXPECT_TRUE(AnyKernelHasThreads(runs));
  std::vector<float> cpu = program("CPU:0").ToVector<float>();
  ASSERT_EQ(emu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(emu[i], cpu[i], 1e-5f * 3) << i;
}

// Whether any kernel the runs recorded reduces across a block's threads (a BARRIER).
bool AnyKernelHasABarrier(const std::vector<Runtime::PlanRun>& runs) {
  for (const Runtime::PlanRun& r : runs)
    for (const Plan::Kernel* k : r.plan->kernels())
      for (const UOp& u : k->ast.Toposort())
        if (u.is(Ops::BARRIER)) return true;
  return false;
}

// `loss(a, device)` and its gradient for a of `shape` (seeded), on EMU:0 and on CPU:0: EMU:0 reduces
// across threads (a BARRIER), with the CPU's loss within `loss_tolerance` of it and the
// gradient within 1e-5 of its largest element (sums in another order).
void ExpectTheCpusLossAndGradient(const std::function<Tensor(const Tensor&, const char*)>& loss,
                                  TensorShape shape, float loss_tolerance) {
  auto run = [&](const char* device) {
    Tensor::ManualSeed(4);
    Tensor a = Tensor::Randn(shape, DType::kF32, device);
    a.RequiresGrad();
    Tensor l = loss(a, device);
    l.Backward();
    std::vector<float> out = l.ToVector<float>(), grad = a.grad().ToVector<float>();
    out.insert(out.end(), grad.begin(), grad.end());
    return out;
  };
  std::vector<Runtime::PlanRun> runs;
  Runtime::Get().Record(&runs);
  std::vector<float> emu = run(kEmu);
  Runtime::Get().Record(nullptr);
  EXPECT_TRUE(AnyKernelHasABarrier(runs));
  std::vector<float> cpu = run("CPU:0");
  ASSERT_EQ(emu.size(), cpu.size());
  EXPECT_NEAR(emu[0], cpu[0], loss_tolerance * std::abs(cpu[0]));
  float most = 0;
  for (size_t i = 1; i < cpu.size(); ++i) most = std::max(most, std::abs(cpu[i]));
  for (size_t i = 1; i < cpu.size(); ++i) EXPECT_NEAR(emu[i], cpu[i], 1e-5f * most) << i;
}

// Rows of 2,048 (a softmax's max and sum, then a row's sum): each row a block's, its threads'
// partial results through shared storage (passes/block_reduce.h).
TEST(EmulatedGpu, LongRowsAreReducedAcrossABlocksThreads) {
  ExpectTheCpusLossAndGradient(
      [](const Tensor& a, const char* device) {
        Tensor b = Tensor::Randn({24, 2048}, DType::kF32, device);
        return ((a * 4.0).Softmax(-1) * b).Sum({1}).Square().Mean();
      },
      {24, 2048}, 1e-5f);
}

// 512 rows of 128 (a layer norm and a softmax over them): too many rows for a block each, so
// a warp each, its lanes' results combined in the warp's registers.
TEST(EmulatedGpu, ManyRowsAreReducedAcrossAWarpsLanes) {
  ExpectTheCpusLossAndGradient(
      [](const Tensor& a, const char* device) {
        Tensor w = Tensor::Randn({512, 128}, DType::kF32, device);
        Tensor d = a - a.Mean({1}, true);
        Tensor normed = d * ((d * d).Mean({1}, true) + 1e-5).Sqrt().Reciprocal();
        return (normed * w).Softmax(-1).Square().Sum();
      },
      {512, 128}, 1e-4f);  // (the loss: a sum of 65,536 squares)
}

// The losses of `steps` AdamW steps of a small GPT (`dim`, a batch of B x T), in `precision`
// (Autocast: f32 master weights), and then a greedy generation.
std::pair<std::vector<float>, std::vector<int64_t>> TrainAndGenerate(
    const char* device, int steps, int64_t dim = 32, int64_t B = 4, int64_t T = 16,
    DType precision = DType::kF32) {
  constexpr int64_t V = 32;
  Tensor::ManualSeed(0);
  Gpt model(GptConfig{V, T, dim, 2, 2, 0.0});
  model.To(device);
  AdamW opt(model.Parameters(), 3e-3);
  std::vector<int32_t> xs(B * T), ys(B * T);
  for (int64_t i = 0; i < B * T; ++i)
    xs[i] = static_cast<int32_t>((i * 5) % V), ys[i] = static_cast<int32_t>((i * 5 + 5) % V);
  Tensor x = Tensor::FromVector(xs, {B, T}).To(device),
         y = Tensor::FromVector(ys, {B * T}).To(device);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    Tensor loss;
    {
      std::optional<Autocast> low;
      if (precision != DType::kF32) low.emplace(precision);
      loss = model.Forward(x).Reshape({B * T, V}).CrossEntropy(y);
    }
    loss.Backward();
    opt.Step({&loss});
    losses.push_back(loss.ToVector<float>()[0]);
  }
  GenerateOptions g;
  g.max_tokens = 8;
  g.temperature = 0;
  return {losses, Generate(model, {1, 6, 11}, g).tokens};
}

TEST(EmulatedGpu, AGptTrainsAndGeneratesAsOnTheCpu) {
  auto [emu_losses, emu_tokens] = TrainAndGenerate(kEmu, 6);
  auto [cpu_losses, cpu_tokens] = TrainAndGenerate("CPU:0", 6);
  ASSERT_EQ(emu_losses.size(), cpu_losses.size());
  for (size_t s = 0; s < cpu_losses.size(); ++s)
    EXPECT_NEAR(emu_losses[s], cpu_losses[s], 1e-4 * cpu_losses[s]) << "step " << s;
  EXPECT_LT(cpu_losses.back(), cpu_losses.front());  // (it learns)
  EXPECT_EQ(emu_tokens, cpu_tokens);
}

// In bf16, a GPT's matmuls large enough for a supplied kernel (the MLP's, 128 x 64 x 256) are
// the CUDA plugin's tensor-core kernels, run fragment by fragment: the losses are the CPU's
// bf16 ones within bf16's rounding of sums taken in other orders.
TEST(EmulatedGpu, ABf16GptTrainsOnTheTensorCoreKernelsAsOnTheCpu) {
  std::vector<Runtime::PlanRun> runs;
  Runtime::Get().Record(&runs);
  auto [emu_losses, emu_tokens] = TrainAndGenerate(kEmu, 4, 64, 4, 32, DType::kBF16);
  Runtime::Get().Record(nullptr);
  EXPECT_GT(MatmulCalls(runs), 0);
  auto [cpu_losses, cpu_tokens] = TrainAndGenerate("CPU:0", 4, 64, 4, 32, DType::kBF16);
  ASSERT_EQ(emu_losses.size(), cpu_losses.size());
  for (size_t s = 0; s < cpu_losses.size(); ++s) {
    EXPECT_NEAR(emu_losses[s], cpu_losses[s], 2e-3 * cpu_losses[s]) << "step " << s;
    std::printf("bf16 step %zu: EMU:0 %.6f, CPU:0 %.6f\n", s + 1, emu_losses[s], cpu_losses[s]);
  }
  EXPECT_LT(emu_losses.back(), emu_losses.front());
}

}  // namespace
}  // namespace uopc
