// The executor on the C backend plugin, loaded from runfiles like any plugin: kernels
// compile once, several kernels in one compiler call, launches are checked first.
#include "devices/kernel_cache.h"

#include <numeric>

#include <gtest/gtest.h>

#include "devices/registry.h"
#include "passes/launch_dims.h"
#include "tests/testing/seed_program.h"

namespace uopc {
namespace {

Device& Cpu() {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice("CPU");
  EXPECT_TRUE(d.ok()) << d.status();
  return **d;
}

// out[i] = i * c + n for i < n (n a VAR)
UOp VarKernel(int c) {
  UOp n = UOp::Var("n", 1, 8), out = UOp::Buffer(DType::kI32, 0, 8);
  UOp i = UOp::Range(n, 0);
  return UOp::Sink({out.Index(i).Store(i * c + n).End({i})});
}

template <typename T>
std::vector<T> Read(Device& d, const Buffer& b) {
  std::vector<T> v(b.count());
  EXPECT_TRUE(d.CopyOut(v.data(), b, b.bytes()).ok());
  return v;
}

TEST(KernelCache, SeedProgramCompilesOnceForEveryTripCount) {
  Device& d = Cpu();
  KernelCache ex(d);
  std::vector<float> x(32);
  std::iota(x.begin(), x.end(), 0.0f);
  Buffer xb = *d.Allocate(DType::kF32, 32), lb = *d.Allocate(DType::kI32, 1),
         ob = *d.Allocate(DType::kF32, 4);
  ASSERT_TRUE(d.CopyIn(xb, x.data(), 128).ok());
  for (auto [n, want] : std::vector<std::pair<int32_t, std::vector<float>>>{
           {3, {3, 27, 51, 75}}, {8, {28, 92, 156, 220}}, {0, {0, 0, 0, 0}}}) {
    ASSERT_TRUE(d.CopyIn(lb, &n, 4).ok());
    absl::Status s = ex.Run({KernelLaunch{testing::SeedTripCountKernel(), {xb, lb, ob}, {}}});
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Read<float>(d, ob), want) << "n=" << n;
  }
  EXPECT_EQ(ex.stats().compile_calls, 1);
  EXPECT_EQ(ex.stats().launches, 3);
}

TEST(KernelCache, SeveralKernelsCompileInOneCall) {
  Device& d = Cpu();
  KernelCache ex(d);
  std::vector<UOp> ks = {VarKernel(1), VarKernel(2), VarKernel(3), VarKernel(2)};
  ASSERT_TRUE(ex.Prepare(ks).ok());
  EXPECT_EQ(ex.stats().compile_calls, 1);
  EXPECT_EQ(ex.stats().kernels_compiled, 3);  // one duplicate
  Buffer ob = *d.Allocate(DType::kI32, 8);
  std::vector<int32_t> zero(8, -1);
  ASSERT_TRUE(d.CopyIn(ob, zero.data(), 32).ok());
  ASSERT_TRUE(ex.Run({KernelLaunch{VarKernel(3), {ob}, {{"n", 5}}}}).ok());
  EXPECT_EQ(Read<int32_t>(d, ob), (std::vector<int32_t>{5, 8, 11, 14, 17, -1, -1, -1}));
  EXPECT_EQ(ex.stats().compile_calls, 1);
}

// A kernel mapped to blocks for a GPU, of run-time length (blocks of 4 threads, as many as
// n needs: its grid is evaluated at each launch), run by the C device: what the plain
// kernel writes, at every length.
TEST(KernelCache, AGridOfRunTimeSizeCoversEveryLength) {
  Device& d = Cpu();
  KernelCache ex(d);
  LaunchDims dims;
  absl::StatusOr<UOp> mapped = MapToLaunchDims(VarKernel(3), LaunchLimits{4, 1 << 20}, &dims);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(dims.global[0], 2u);  // (8 at most: 2 blocks of 4)
  Buffer ob = *d.Allocate(DType::kI32, 8);
  for (int64_t n : {1, 4, 5, 8}) {
    std::vector<int32_t> none(8, -1), want(8, -1);
    for (int64_t i = 0; i < n; ++i) want[i] = static_cast<int32_t>(i * 3 + n);
    ASSERT_TRUE(d.CopyIn(ob, none.data(), 32).ok());
    ASSERT_TRUE(ex.Run({KernelLaunch{*mapped, {ob}, {{"n", n}}}}).ok());
    EXPECT_EQ(Read<int32_t>(d, ob), want) << "n=" << n;
  }
}

TEST(KernelCache, LaunchesAreCheckedBeforeTheyRun) {
  Device& d = Cpu();
  KernelCache ex(d);
  Buffer ob = *d.Allocate(DType::kI32, 8), small = *d.Allocate(DType::kI32, 4),
         fl = *d.Allocate(DType::kF32, 8);
  auto run = [&](std::vector<Buffer> bufs, absl::flat_hash_map<std::string, int64_t> vars) {
    return std::string(
        ex.Run({KernelLaunch{VarKernel(1), std::move(bufs), std::move(vars)}}).message());
  };
  EXPECT_EQ(run({ob}, {{"n", 9}}), "launch on CPU:0: VAR n = 9 is outside its bounds [1, 8]");
  EXPECT_EQ(run({ob}, {{"n", 0}}), "launch on CPU:0: VAR n = 0 is outside its bounds [1, 8]");
  EXPECT_EQ(run({ob}, {}), "launch on CPU:0: no value for VAR n");
  EXPECT_EQ(run({}, {{"n", 2}}),
            "launch on CPU:0: buffer slot 0 wants 8 x i32; no buffer is bound");
  EXPECT_EQ(run({small}, {{"n", 2}}), "launch on CPU:0: buffer slot 0 wants 8 x i32; got 4 x i32");
  EXPECT_EQ(run({fl}, {{"n", 2}}), "launch on CPU:0: buffer slot 0 wants 8 x i32; got 8 x f32");
  EXPECT_EQ(run({ob}, {{"n", 8}}), "");
}

TEST(KernelCache, InvalidKernelsAreRefusedByTheBackend) {
  Device& d = Cpu();
  KernelCache ex(d);
  UOp bad = UOp::Sink({UOp::Buffer(DType::kF32, 0, 4).Index(0).Store(UOp::Int(1))});
  EXPECT_EQ(ex.Prepare({bad}).message(),
            "store (void, operands f32 (), i32 ()): storing a value of another dtype; expected a "
            "f32 value");
}

TEST(Allocator, FreedMemoryIsReused) {
  Device& d = Cpu();
  CachingAllocator::Stats before = d.allocator().stats();
  for (int i = 0; i < 10; ++i) {
    Buffer b = *d.Allocate(DType::kF32, 1000 + i);  // one size class (4 KiB)
  }
  CachingAllocator::Stats after = d.allocator().stats();
  EXPECT_LE(after.plugin_allocs - before.plugin_allocs, 1u);
  EXPECT_GE(after.cache_hits - before.cache_hits, 9u);
  EXPECT_EQ(CachingAllocator::SizeClass(1), 256u);
  EXPECT_EQ(CachingAllocator::SizeClass(4001), 4096u);
  EXPECT_EQ(CachingAllocator::SizeClass((1 << 20) + 1), 2u << 20);
}

TEST(Allocator, TooLargeIsResourceExhaustedNotACrash) {
  absl::StatusOr<Buffer> b = Cpu().Allocate(DType::kF64, int64_t{1} << 50);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace uopc
