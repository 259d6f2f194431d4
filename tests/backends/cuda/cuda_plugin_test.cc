// The CUDA plugin through the real loader. Everywhere: it exports only its entry, and where
// there is no driver or no GPU it is refused as unusable, saying why (the host goes on).
// With a GPU (the GPU check runs this binary there): the conformance suite on CUDA:0, and a
// tensor program on CUDA:0 equal to the same program on the CPU.
#include <cstdio>
#include <cstdlib>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "backends/cuda/driver.h"
#include "core/serialize.h"
#include "passes/launch_dims.h"
#include "devices/registry.h"
#include "frontend/dlpack.h"
#include "frontend/tensor.h"
#include "tests/backends/conformance/conformance.h"
#include "tests/testing/command.h"

namespace uopc {
namespace {

std::string PluginPath() { return testing::Runfile("backends/cuda/libuopc_plugin_cuda.so"); }

TEST(CudaPlugin, ExportsOnlyItsEntry) {
  testing::CommandResult r = testing::RunCommand("nm -D --defined-only " + PluginPath());
  if (r.status != 0) GTEST_SKIP() << "nm: " << r.out;
  std::string extra;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    absl::string_view sym = line.substr(line.rfind(' ') + 1);
    if (sym.empty() || sym == UOPC_ENTRY_SYMBOL || absl::StartsWith(sym, "_ZNSt") ||
        absl::StartsWith(sym, "_ZNKSt") || absl::StartsWith(sym, "_ZSt") ||
        absl::StartsWith(sym, "_ZN9__gnu_cxx"))
      continue;
    absl::StrAppend(&extra, sym, " ");
  }
  EXPECT_EQ(extra, "");
  EXPECT_EQ(testing::RunCommand("ldd " + PluginPath() + " | grep -c -i cuda").out, "0\n");
}

// The errors after which a CUDA context is unusable lose the device (DEVICE_LOST naming the
// kernel, then on every later call); the others stay the call's own error.
TEST(CudaPlugin, ContextBreakingErrorsAreTheStickyOnes) {
  for (cuda::CUresult r : {700, 702, 710, 714, 715, 716, 717, 718, 719, 214, 999})
    EXPECT_TRUE(cuda::BreaksContext(r)) << r;
  for (cuda::CUresult r : {0, 1, 2, 100, 200, 209, 218, 300, 400, 600, 701, 999 - 1})
    EXPECT_FALSE(cuda::BreaksContext(r)) << r;
}

// Without a driver the plugin is refused, saying why; with one, it loads (no test skips on
// either kind of machine: the GPU check counts a skip as a failure).
TEST(CudaPlugin, LoadsWithADriverAndIsRefusedSayingWhyWithout) {
  absl::StatusOr<std::unique_ptr<Plugin>> p = Plugin::Load(PluginPath());
  if (cuda::Driver::Present()) {
    EXPECT_TRUE(p.ok()) << p.status();
    return;
  }
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(p.status().message().find("unusable on this machine (cuda plugin: no CUDA driver ("),
            std::string::npos)
      << p.status();
}

Device* Gpu() {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice("CUDA:0");
  return d.ok() ? *d : nullptr;
}

TEST(CudaPlugin, PassesTheConformanceSuite) {
  Device* d = Gpu();
  if (!d) GTEST_SKIP() << "no GPU here: " << DeviceRegistry::Get().GetDevice("CUDA:0").status();
  ConformanceReport r = RunConformance(*d);
  for (const ConformanceCase& c : r.cases)
    EXPECT_NE(c.status, ConformanceCase::kFail) << c.section << ": " << c.name << ": " << c.detail;
  std::printf("%s%d passed, %d failed, %d skipped\n", r.matrix.c_str(), r.passed, r.failed,
              r.skipped);
}

// A kernel the host mapped to a grid comes back with its launch dims.
TEST(CudaPlugin, RenderGivesAKernelMappedToAGridItsDims) {
  Device* d = Gpu();
  if (!d) GTEST_SKIP() << "no GPU here";
  UOp i = UOp::Range(1024, 0);
  UOp k = UOp::Sink({UOp::Buffer(DType::kF32, 0, 1024).Index(i).Store(UOp::Const(DType::kF32, 1.0f)).End({i})});
  LaunchDims dims;
  const std::string mapped = SerializeGraph(*MapToLaunchDims(k, {}, &dims));
  ASSERT_EQ(dims.global[0], 4u);
  absl::StatusOr<RenderedKernel> r = d->Render(mapped, "k");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dims, dims);
}

TEST(CudaPlugin, ATensorProgramOnTheGpuEqualsItOnTheCpu) {
  Device* d = Gpu();
  if (!d) GTEST_SKIP() << "no GPU here";
  auto program = [](const char* dev) {
    Tensor::ManualSeed(4);
    Tensor a = Tensor::Randn({64, 48}, DType::kF32, dev), b = Tensor::Randn({48, 32}, DType::kF32, dev);
    return (a.Matmul(b).Relu().Softmax(-1) * 3.0).Sum({0}).ToVector<float>();
  };
  std::vector<float> gpu = program("CUDA:0"), cpu = program("CPU");
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(gpu[i], cpu[i], 1e-5 * std::abs(cpu[i]) + 1e-6);
  // and the copy between them
  Tensor x = Tensor::FromVector<float>({1, 2, 3}, {3}, DType::kF32, "CPU").To("CUDA:0") * 2.0;
  EXPECT_EQ(x.To("CPU").ToVector<float>(), (std::vector<float>{2, 4, 6}));
}

// A kernel over many blocks (4M elements: 16,384 blocks of 256 threads) and one of run-time
// length (a VAR: its grid computed at each launch from the length), at lengths around the
// block size, give the CPU's values; so do a reduction too long for one thread.
TEST(CudaPlugin, MultiBlockAndRunTimeLengthKernelsEqualTheCpu) {
  if (!Gpu()) GTEST_SKIP() << "no GPU here";
  auto program = [](const char* dev) {
    Tensor::ManualSeed(5);
    Tensor a = Tensor::Randn({1 << 22}, DType::kF32, dev);
    return ((a * 2.0 + 1.0).Relu().Sum({0}) / 1e3).ToVector<float>()[0];
  };
  EXPECT_NEAR(program("CUDA:0"), program("CPU"), 1e-3 * std::abs(program("CPU")) + 1e-3);
  std::vector<float> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 97) - 48;
  for (int64_t n : {1, 255, 256, 257, 600, 1000}) {
    SymInt T = SymInt::Variable("T", 1, 1000, n);
    auto run = [&](const char* dev) {
      Tensor x = Tensor::FromVector(data, {1000}, DType::kF32, dev).Slice(0, 0, T);
      return (x * x + 1.0).ToVector<float>();
    };
    EXPECT_EQ(run("CUDA:0"), run("CPU")) << "length " << n;
  }
}

// DLPack on CUDA: a CUDA tensor goes out as kDLCUDA memory and comes back in place.
TEST(CudaPlugin, DLPackSharesCudaMemory) {
  if (!Gpu()) GTEST_SKIP() << "no GPU here";
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}, DType::kF32, "CUDA:0") * 3.0;
  x.Realize();
  DLManagedTensor* m = ToDLPack(x);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(m->dl_tensor.device.device_id, 0);
  Tensor back = FromDLPack(m);
  EXPECT_EQ(back.device(), x.device());
  EXPECT_EQ(back.To("CPU").ToVector<float>(), (std::vector<float>{3, 6, 9, 12}));
}

}  // namespace
}  // namespace uopc
