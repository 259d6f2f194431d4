// The kernels a GPU gets, without a GPU: every kernel of the bench GPT's training step (and
// of a generation, whose prompt length is a VAR) is lowered for sm_90 (UOPC_TARGET, from
// the BUILD rule), rendered by the CUDA renderer and compiled by NVRTC for sm_90, whose
// ptxas reports each kernel's registers and spills. A GPU kernel must fit: no spills, at
// most 128 registers a thread (so that blocks of 256 threads keep several warps on a
// multiprocessor), and no thread doing the work of a CPU kernel. A smaller GPT's kernels,
// lowered by the same rules, also run as CUDA text on the CPU against core's interpreter.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include <gtest/gtest.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "backends/cuda/gpu_target.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/render_cuda.h"
#include "core/bounds.h"
#include "core/float16.h"
#include "core/interpreter.h"
#include "core/kernel_signature.h"
#include "core/uir.h"
#include "frontend/generate.h"
#include "frontend/nn.h"
#include "frontend/optim.h"
#include "frontend/realize.h"
#include "passes/linearize.h"
#include "passes/scope.h"
#include "tests/testing/cuda_on_cpu_build.h"

namespace uopc {
namespace {

// The distinct kernels of one training step (batch B of the config's context) and one short
// generation of a GPT.
std::vector<UOp> GptKernels(const GptConfig& config, int64_t B) {
  std::vector<Runtime::PlanRun> runs;
  Runtime::Get().Record(&runs);
  {
    const int64_t T = config.context;
    Tensor::ManualSeed(0);
    Gpt model(config);
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

// The bench GPT's.
std::vector<UOp> BenchGptKernels() { return GptKernels(GptConfig{65, 64, 128, 4, 4, 0.0}, 16); }

// For each STORE, the iterations of the loops around it (each RANGE's largest length,
// multiplied): with `launch`, the launch's GLOBAL and LOCAL ranges too.
std::vector<int64_t> StoreIterations(const UOp& kernel, bool launch) {
  ScopeAnalysis scopes(kernel);
  std::vector<int64_t> out;
  for (const UOp& u : kernel.Toposort()) {
    if (!u.is(Ops::STORE)) continue;
    int64_t n = 1;
    for (const UOp::Node* r : scopes.Of(u)) {
      const UOp& range = scopes.Range(r);
      const RangeKind k = range.arg().Get<RangeArg>().kind;
      if (launch || (k != RangeKind::kGlobal && k != RangeKind::kLocal))
        n *= std::max<int64_t>(1, VMax(range.src(0)));
    }
    out.push_back(n);
  }
  return out;
}

// The stores one thread makes.
int64_t ThreadWork(const UOp& kernel) {
  const std::vector<int64_t> n = StoreIterations(kernel, /*launch=*/false);
  return std::accumulate(n.begin(), n.end(), int64_t{0});
}

// The iterations of a kernel's busiest STORE, the launch's included.
int64_t Iterations(const UOp& kernel) {
  const std::vector<int64_t> n = StoreIterations(kernel, /*launch=*/true);
  return n.empty() ? 0 : *std::max_element(n.begin(), n.end());
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
    if (symbolic && !one_element) {
      EXPECT_GT(threads, 1) << name << "\n" << ToUir(kd.first);
    }
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

// A small GPT's kernels for sm_90 (the same lowering: rows of 65 and 64 a warp's, sums over
// its 256 positions a block's, prompts of run-time length), their CUDA text compiled for the
// CPU and run on the emulator's fibers, against core's interpreter on the same inputs: every
// buffer a kernel writes, integers exactly and floats within 1e-5 (most bit for bit).
// The kernels of more than 2^21 iterations are left out: core's interpreter takes seconds for
// each.
TEST(GpuKernels, ASmallGptsCudaTextGivesTheInterpretersResults) {
  const LaunchLimits limits{256, 2147483647};
  std::vector<UOp> kernels = GptKernels(GptConfig{65, 32, 64, 4, 2, 0.0}, 8);
  std::vector<std::string> sources, names;
  std::vector<LaunchDims> dims;
  for (size_t i = 0; i < kernels.size(); ++i) {
    names.push_back(absl::StrCat("gpt_", i));
    absl::StatusOr<CudaKernel> k = RenderCudaKernel(kernels[i], names.back(), limits);
    ASSERT_TRUE(k.ok()) << k.status() << "\n" << ToUir(kernels[i]);
    sources.push_back(k->source);
    dims.push_back(k->dims);
  }
  ASSERT_TRUE(testing::BuildCudaOnCpu("small_gpt", sources, names).ok());
  // (long: kernels past 2^21 iterations, the largest matmuls and the sums of their products over
  // the positions, which core's interpreter takes seconds for)
  int exact = 0, across_threads = 0, long_ones = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    SCOPED_TRACE(names[i] + "\n" + ToUir(kernels[i]));
    if (Iterations(kernels[i]) > (1 << 21)) {
      ++long_ones;
      continue;
    }
    absl::StatusOr<KernelSignature> sig = SignatureOf(kernels[i]);
    ASSERT_TRUE(sig.ok()) << sig.status();
    // inputs: floats in [-1, 1), integers 0 to 4 (token ids, indices), bools alternating
    std::vector<std::vector<uint8_t>> want(sig->buffers.size()), got;
    std::vector<BufferRef> refs(sig->buffers.size());
    for (size_t s = 0; s < sig->buffers.size(); ++s) {
      const KernelSignature::Buffer& b = sig->buffers[s];
      if (!b.used) continue;
      const int size = DTypeSize(b.dtype);
      want[s].resize(b.size * size);
      for (int64_t e = 0; e < b.size; ++e) {
        const float f = static_cast<float>((e * 2654435761u + s * 97) % 2000) / 1000 - 1;
        const int64_t n = (e * 7 + 3) % 5;
        uint8_t* at = &want[s][e * size];
        if (b.dtype == DType::kF32)
          std::memcpy(at, &f, 4);
        else if (b.dtype == DType::kBF16 || b.dtype == DType::kF16) {
          const uint16_t h = b.dtype == DType::kF16 ? F32ToF16(f) : F32ToBF16(f);
          std::memcpy(at, &h, 2);
        } else if (b.dtype == DType::kBool)
          *at = e % 2;
        else
          std::memcpy(at, &n, size);  // (little-endian: the low bytes)
      }
      refs[s] = {want[s].data(), b.dtype, b.size};
    }
    got = want;
    absl::flat_hash_map<std::string, int64_t> vars;
    std::vector<int64_t> values;
    for (const VarArg& v : sig->vars) {
      values.push_back((v.lo + v.hi + 1) / 2);
      vars[v.name] = values.back();
    }
    absl::StatusOr<std::vector<UOp>> program = Linearize(kernels[i]);
    ASSERT_TRUE(program.ok()) << program.status();
    const absl::Status reference = Interpret(*program, refs, vars);
    ASSERT_TRUE(reference.ok()) << reference;
    std::vector<void*> ptrs;
    for (size_t s = 0; s < got.size(); ++s)
      ptrs.push_back(sig->buffers[s].used ? got[s].data() : nullptr);
    const absl::Status run = testing::LaunchOnCpu(names[i], dims[i], ptrs, values);
    ASSERT_TRUE(run.ok()) << run;
    across_threads += HasABarrier(kernels[i]);
    bool same = true;
    for (size_t s = 0; s < got.size(); ++s) {
      const KernelSignature::Buffer& b = sig->buffers[s];
      if (!b.written || got[s] == want[s]) continue;
      same = false;
      for (int64_t e = 0; e < b.size; ++e) {
        const int size = DTypeSize(b.dtype);
        if (!IsFloat(b.dtype)) {
          ASSERT_EQ(std::memcmp(&got[s][e * size], &want[s][e * size], size), 0)
              << "buffer " << s << " element " << e;
          continue;
        }
        auto value = [&](const std::vector<uint8_t>& v) -> double {
          uint16_t h;
          float f;
          double d;
          if (b.dtype == DType::kF64) return std::memcpy(&d, &v[e * 8], 8), d;
          if (b.dtype == DType::kF32) return std::memcpy(&f, &v[e * 4], 4), f;
          std::memcpy(&h, &v[e * 2], 2);
          return b.dtype == DType::kF16 ? F16ToF32(h) : BF16ToF32(h);
        };
        const double g = value(got[s]), w = value(want[s]);
        if (std::isnan(g) && std::isnan(w)) continue;
        ASSERT_LE(std::abs(g - w), 1e-5 * std::max(1.0, std::abs(w)))
            << "buffer " << s << " element " << e << ": " << g << ", the interpreter " << w;
      }
    }
    exact += same;
  }
  std::printf(
      "%zu kernels: %zu run as CUDA text, %d of them bit for bit, %d across a block's threads; "
      "%d long ones left out\n",
      kernels.size(), kernels.size() - long_ones, exact, across_threads, long_ones);
  EXPECT_GT(across_threads, 5);
}

}  // namespace
}  // namespace uopc
