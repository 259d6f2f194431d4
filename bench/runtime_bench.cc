// Speed of the C backend and the plugin ABI, each next to its baseline in the same run:
// cold compiles of one kernel and of a 20-kernel plan in one gcc call (against 20 calls),
// a cache hit, and launching an empty kernel through the ABI (against calling the same
// compiled function directly).
//   bazel run -c opt //bench:runtime_bench
#include <atomic>
#include <cstdlib>

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

#include "backends/c/compiler.h"
#include "backends/c/render_c.h"
#include "core/serialize.h"
#include "devices/kernel_cache.h"
#include "devices/registry.h"
#include "passes/linearize.h"

namespace uopc {
namespace {

// A typical elementwise kernel, made unique by `salt` so that nothing hits a cache.
std::string KernelSource(int salt) {
  UOp a = UOp::Buffer(DType::kF32, 0, 4096), b = UOp::Buffer(DType::kF32, 1, 4096),
      o = UOp::Buffer(DType::kF32, 2, 4096);
  UOp i = UOp::Range(4096, 0);
  UOp v =
      a.Index(i).Load() * b.Index(i).Load() + UOp::Const(DType::kF32, static_cast<double>(salt));
  std::vector<UOp> p = *Linearize(UOp::Sink({o.Index(i).Store(v).End({i})}));
  return *RenderC(p, absl::StrCat("k", salt));
}

CCompiler& FreshCompiler() {
  static CCompiler* c = [] {
    CCompiler::Options o;
    char tmpl[] = "/tmp/uopc-bench-XXXXXX";
    o.cache_dir = mkdtemp(tmpl);
    return new CCompiler(o);
  }();
  return *c;
}

std::atomic<int> g_salt{1 << 20};

void BM_ColdCompileOneKernel(benchmark::State& state) {
  for (auto _ : state) {
    std::string src = CPrelude() + KernelSource(g_salt++);
    benchmark::DoNotOptimize(FreshCompiler().Compile(src));
  }
}
BENCHMARK(BM_ColdCompileOneKernel)->Unit(benchmark::kMillisecond)->Iterations(10);

void BM_ColdCompile20KernelsOneCall(benchmark::State& state) {
  for (auto _ : state) {
    std::string src = CPrelude();
    for (int k = 0; k < 20; ++k) src += KernelSource(g_salt++);
    benchmark::DoNotOptimize(FreshCompiler().Compile(src));
  }
}
BENCHMARK(BM_ColdCompile20KernelsOneCall)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_ColdCompile20KernelsTwentyCalls(benchmark::State& state) {  // the baseline
  for (auto _ : state)
    for (int k = 0; k < 20; ++k)
      benchmark::DoNotOptimize(FreshCompiler().Compile(CPrelude() + KernelSource(g_salt++)));
}
BENCHMARK(BM_ColdCompile20KernelsTwentyCalls)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_CacheHit(benchmark::State& state) {
  std::string src = CPrelude() + KernelSource(7);
  (void)FreshCompiler().Compile(src);
  for (auto _ : state) benchmark::DoNotOptimize(FreshCompiler().Compile(src));
}
BENCHMARK(BM_CacheHit)->Unit(benchmark::kMicrosecond);

struct EmptyKernel {
  Device* dev = nullptr;
  std::shared_ptr<Program> prog;
  void* direct = nullptr;
  EmptyKernel() {
    dev = *DeviceRegistry::Get().GetDevice("CPU");
    UOp k = UOp::Sink({});
    std::string src = dev->Render(SerializeGraph(k), "empty")->source;
    prog = *dev->Build({src}, {"empty"});
  }
};

void BM_LaunchEmptyKernelThroughTheABI(benchmark::State& state) {
  static EmptyKernel k;
  for (auto _ : state) {  // queued on the device's worker, and waited for
    absl::StatusOr<Event> done = k.dev->Launch(*k.prog, 0, {}, {});
    benchmark::DoNotOptimize(done->Wait());
  }
}
BENCHMARK(BM_LaunchEmptyKernelThroughTheABI);

void BM_CallEmptyFunctionDirectly(benchmark::State& state) {  // the baseline
  static void* h = [] {
    std::string src =
        CPrelude() +
        "UOPC_ENTRY void empty_entry(void* const* b, const long long* v) { (void)b; (void)v; }\n";
    return dlopen(FreshCompiler().Materialize(*FreshCompiler().Compile(src))->c_str(), RTLD_NOW);
  }();
  static auto fn =
      reinterpret_cast<void (*)(void* const*, const long long*)>(dlsym(h, "empty_entry"));
  for (auto _ : state) {
    fn(nullptr, nullptr);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_CallEmptyFunctionDirectly);

}  // namespace
}  // namespace uopc

BENCHMARK_MAIN();
