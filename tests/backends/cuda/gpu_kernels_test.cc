// The kernels a GPU gets, without a GPU: every kernel of the bench GPT's training step (and
// of a generation, whose prompt length is a VAR) is lowered for sm_90 (UOPC_TARGET, from
// the BUILD rule), rendered by the CUDA renderer and compiled by NVRTC for sm_90, whose
// ptxas reports each kernel's registers and spills. A GPU kernel must fit: no spills, at
// most 128 registers a thread (so that blocks of 256 threads keep several warps on a
// multiprocessor), and no thread doing the work of a CPU kernel.
#include <gtest/gtest.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "backends/cuda/gpu_target.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/render_cuda.h"
#include "core/bounds.h"
#include "core/uir.h"
#include "frontend/generate.h"
#include "frontend/nn.h"
#include "frontend/optim.h"
#include "frontend/realize.h"
#include "passes/scope.h"

namespace uopc {
namespace {

// The distinct kernels of one training step and one short generation of the bench GPT.
std::vector<UOp> BenchGptKernels() {
  std::vector<Runtime::PlanRun> runs;
  Runtime::Get().Record(&runs);
  {
    constexpr int64_t B = 16, T = 64;
    Tensor::ManualSeed(0);
    Gpt model(GptConfig{65, T, 128, 4, 4, 0.0});
    AdamW opt(model.Parameters(), 1e-3);
    std::vector<int32_t> xs(B * T), ys(B * T);
    for (int64_t i = 0; i < B * T; ++i)
      xs[i] = static_cast<int32_t>(i % 65), ys[i] = static_cast<int32_t>((i * 7) % 65);
    Tensor loss = model.Forward(Tensor::FromVector(xs, {B, T}))
                      .Reshape({B * T, 65})
                      .CrossEntropy(Tensor::FromVector(ys, {B * T}));
    loss.Backward();
    opt.Step({&loss});
    GenerateOptions g;
    g.max_tokens = 3;
    Generate(model, {1, 2, 3, 4, 5}, g);
  }
  Runtime::Get().Record(nullptr);
  std::vector<UOp> kernels;
  absl::flat_hash_map<UOp, bool> seen;
  for (const Runtime::PlanRun& r : runs)
    for (const Plan::Kernel* k : r.plan->kernels())
      if (seen.emplace(k->ast, true).second) kernels.push_back(k->ast);
  return kernels;
}

// The stores one thread makes: for each STORE, the iterations of the loops around it that
// are not the launch's (each RANGE's largest length, multiplied), summed.
int64_t ThreadWork(const UOp& kernel) {
  ScopeAnalysis scopes(kernel);
  int64_t work = 0;
  for (const UOp& u : kernel.Toposort()) {
    if (!u.is(Ops::STORE)) continue;
    int64_t n = 1;
    for (const UOp::Node* r : scopes.Of(u)) {
      const UOp& range = scopes.Range(r);
      const RangeKind k = range.arg().Get<RangeArg>().kind;
      if (k != RangeKind::kGlobal && k != RangeKind::kLocal)
        n *= std::max<int64_t>(1, VMax(range.src(0)));
    }
    work += n;
  }
  return work;
}

// Whether a kernel reduces across a block's threads (passes/block_reduce.h).
bool HasABarrier(const UOp& kernel) {
  for (const UOp& u : kernel.Toposort())
    if (u.is(Ops::BARRIER)) return true;
  return false;
}

TEST(GpuKernels, TheyAreLoweredForTheGpu) {
  const std::optional<Target>& t = Runtime::Get().target_override();
  ASSERT_TRUE(t.has_value()) << "UOPC_TARGET is not set (see the BUILD rule)";
  EXPECT_EQ(*t, *NamedGpuTarget("sm_90"));  // (the BUILD rule's text is the table's)
}

TEST(GpuKernels, BenchGptKernelsCompileForSm90WithinTheirResources) {
  absl::StatusOr<const Nvrtc*> nvrtc = Nvrtc::Load();
  if (!nvrtc.ok()) GTEST_SKIP() << "no NVRTC here: " << nvrtc.status().message();
  const Target gpu = *Runtime::Get().target_override();
  const LaunchLimits limits{256, 2147483647};  // (the CUDA plugin's: 256 threads a block)
  std::vector<UOp> kernels = BenchGptKernels();
  EXPECT_GT(kernels.size(), 100u);
  std::string tu = CudaPrelude();
  absl::flat_hash_map<std::string, std::pair<UOp, LaunchDims>> by_name;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const std::string name = absl::StrCat("gpt_", i);
    absl::StatusOr<CudaKernel> k = RenderCudaKernel(kernels[i], name, limits);
    ASSERT_TRUE(k.ok()) << k.status() << "\n" << ToUir(kernels[i]);
    tu += k->source;
    by_name[name] = {kernels[i], k->dims};
  }
  absl::StatusOr<Nvrtc::Binary> b =
      (*nvrtc)->Compile(tu, 90, {"-fmad=false", "-w", "--ptxas-options=-v"});
  ASSERT_TRUE(b.ok()) << b.status().message().substr(0, 3000);
  const std::vector<PtxasInfo> info = ParsePtxasInfo(b->log);
  EXPECT_EQ(info.size(), kernels.size()) << b->log.substr(0, 2000);
  int most_registers = 0;
  for (const PtxasInfo& k : info) {
    SCOPED_TRACE(ToUir(by_name[k.function].first));
    EXPECT_LE(k.registers, 128) << k.function;
    EXPECT_EQ(k.spill_store_bytes, 0) << k.function;
    EXPECT_EQ(k.spill_load_bytes, 0) << k.function;
    most_registers = std::max(most_registers, k.registers);
  }
  // the work of one thread: the stores of its loops
  int64_t most_work = 0;
  int block_reductions = 0;
  std::string heaviest;
  for (const auto& [name, kd] : by_name) {
    const LaunchDims& d = kd.second;
    const int64_t threads = int64_t{d.global[0]} * d.global[1] * d.global[2] * d.local[0] *
                            d.local[1] * d.local[2];
    const int64_t work = ThreadWork(kd.first);
    block_reductions += HasABarrier(kd.first);
    bool symbolic = false, one_element = true;
    for (const UOp& u : kd.first.Toposort()) {
      symbolic |= u.is(Ops::VAR);
      if (u.is(Ops::STORE)) one_element &= u.src(0).src(1).is(Ops::CONST);
    }
    // a kernel of run-time length (a prefill) gets a grid for its largest length, but for a
    // reduction to one element (an index's check): a block reduces constant lengths only
    if (symbolic && !one_element) EXPECT_GT(threads, 1) << name << "\n" << ToUir(kd.first);
    if (work > most_work) most_work = work, heaviest = ToUir(kd.first);
  }
  std::printf(
      "%zu kernels for sm_90 (%s): at most %d registers a thread; at most %lld "
      "stores a thread; %d reduce across a block\n",
      kernels.size(), gpu.ToString().c_str(), most_registers, static_cast<long long>(most_work),
      block_reductions);
  EXPECT_LE(most_work, 4096) << heaviest;
  // the sums over the batch's 1,024 positions (bias and layer-norm gradients), the loss's
  EXPECT_GT(block_reductions, 0);
}

}  // namespace
}  // namespace uopc
