// Plans across two CPU devices (the bench sets UOPC_CPU_DEVICES=2), each next to its baseline
// in the same run, the two measured alternately within every iteration so that the
// machine's drift hits both alike:
//  - a copy step CPU:0 -> CPU:1 through the executor, against memcpy of the same bytes;
//  - the cost of a plan step: a plan of 100 one-element kernels on one device, and the same
//    steps alternating between two devices (each then waits for the other's event), against
//    100 launches of the same kernels straight through the ABI.
//   bazel run -c opt //bench:devices_bench
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>

#include "devices/registry.h"
#include "runtime/executor.h"

namespace uopc {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Device* Get(const char* name) { return *DeviceRegistry::Get().GetDevice(name); }

// One copy step of `bytes` bytes from an input on CPU:0 to a buffer on CPU:1.
Plan CopyPlan(int64_t bytes) {
  Plan p;
  p.num_inputs = 1;
  p.buffers = {{DType::kU8, bytes, "CPU:0", Plan::Role::kInput},
               {DType::kU8, bytes, "CPU:1", Plan::Role::kOutput}};
  p.steps.push_back({Plan::Copy{0, 1, 0, 0, static_cast<uint64_t>(bytes)}, "CPU:1"});
  p.outputs = {1};
  return p;
}

void BM_CopyCpu0ToCpu1AgainstMemcpy(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  Executor ex(DeviceRegistry::Get());
  Plan plan = CopyPlan(bytes);
  Buffer in = *Get("CPU:0")->Allocate(DType::kU8, bytes);
  std::vector<uint8_t> fill(bytes, 7), a(bytes), b(bytes);
  (void)Get("CPU:0")->CopyIn(in, fill.data(), bytes);
  std::memcpy(a.data(), fill.data(), bytes);  // first touch
  (void)ex.Run(plan, {in});                  // warm: the destination's size class is cached
  std::vector<double> ratio;
  double copy_s = 0, memcpy_s = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    absl::StatusOr<std::vector<Buffer>> out = ex.Run(plan, {in});
    auto t1 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::ClobberMemory();
    auto t2 = Clock::now();
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
    copy_s += Seconds(t0, t1);
    memcpy_s += Seconds(t1, t2);
    ratio.push_back(Seconds(t1, t2) / Seconds(t0, t1));
    state.SetIterationTime(Seconds(t0, t1));
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["copy_GB/s"] = bytes * n / copy_s / 1e9;
  state.counters["memcpy_GB/s"] = bytes * n / memcpy_s / 1e9;
  state.counters["copy/memcpy"] = Median(ratio);  // of per-iteration bandwidth ratios
}
BENCHMARK(BM_CopyCpu0ToCpu1AgainstMemcpy)
    ->Arg(64 << 10)
    ->Arg(1 << 20)
    ->Arg(16 << 20)
    ->Arg(64 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// out[0] = in[0] + 1: the smallest kernel there is.
UOp Tiny() {
  UOp out = UOp::Buffer(DType::kF32, 0, 1), in = UOp::Buffer(DType::kF32, 1, 1);
  return UOp::Sink({out.Index(0).Store(in.Index(0).Load() + UOp::Const(DType::kF32, 1.0))});
}

// n tiny kernels, each reading the previous one's output, on `devices` in turn (with a copy
// step wherever the device changes).
Plan Chain(int n, const std::vector<const char*>& devices) {
  Plan p;
  p.num_inputs = 1;
  p.buffers.push_back({DType::kF32, 1, devices[0], Plan::Role::kInput});
  for (int i = 0; i < n; ++i) {
    const char* d = devices[i % devices.size()];
    int last = static_cast<int>(p.buffers.size()) - 1;
    if (p.buffers[last].device != d) {
      p.buffers.push_back({DType::kF32, 1, d, Plan::Role::kTemp});
      p.steps.push_back({Plan::Copy{last, last + 1, 0, 0, 4}, d});
      ++last;
    }
    p.buffers.push_back({DType::kF32, 1, d, Plan::Role::kTemp});
    p.steps.push_back({Plan::Kernel{Tiny(), {last + 1, last}, {last + 1}}, d});
  }
  p.buffers.back().role = Plan::Role::kOutput;
  p.outputs = {static_cast<int>(p.buffers.size()) - 1};
  return p;
}

// A plan of 100 steps against 100 launches through the ABI (each timed per step).
void BM_PlanStepAgainstALaunch(benchmark::State& state) {
  const int n = 100;
  Executor ex(DeviceRegistry::Get());
  std::vector<const char*> devices = {"CPU:0"};
  if (state.range(0) == 2) devices.push_back("CPU:1");
  Plan plan = Chain(n, devices);
  Device* d = Get("CPU:0");
  Buffer x = *d->Allocate(DType::kF32, 1), y = *d->Allocate(DType::kF32, 1);
  float one = 1;
  (void)d->CopyIn(x, &one, 4);
  KernelLaunch launch{Tiny(), {y, x}, {}};
  KernelCache& kernels = ex.KernelsFor(d);
  (void)ex.Run(plan, {x});  // compiles
  (void)kernels.Run({launch});
  std::vector<double> ratio;
  double plan_s = 0, launch_s = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    absl::StatusOr<std::vector<Buffer>> out = ex.Run(plan, {x});
    auto t1 = Clock::now();
    for (int i = 0; i < n; ++i) (void)kernels.Launch(launch);
    (void)d->Synchronize();
    auto t2 = Clock::now();
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
    plan_s += Seconds(t0, t1);
    launch_s += Seconds(t1, t2);
    ratio.push_back(Seconds(t0, t1) / Seconds(t1, t2));
    state.SetIterationTime(Seconds(t0, t1));
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["us/step"] = plan_s / iters / plan.steps.size() * 1e6;
  state.counters["us/launch"] = launch_s / iters / n * 1e6;
  state.counters["plan/launches"] = Median(ratio);
}
BENCHMARK(BM_PlanStepAgainstALaunch)
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace uopc

int main(int argc, char** argv) {
  setenv("UOPC_CPU_DEVICES", "2", 0);  // before the registry is first used
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
