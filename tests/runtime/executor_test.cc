// The executor on real plugins: the C plugin with three CPU devices (CPU:2 is lost at its
// second launch) and the fake plugin's FAKE:0 (host memory, no compiler), all set by the
// BUILD rule. Plans come from the lowering pipeline, or are built by hand where a test
// needs a plan the pipeline does not make yet.
#include "runtime/executor.h"

#include <sstream>

#include <gtest/gtest.h>

#include "core/uir.h"
#include "passes/pipeline.h"
#include "runtime/plan_cache.h"

namespace uopc {
namespace {

DeviceRegistry& Registry() { return DeviceRegistry::Get(); }
Device* Get(const char* name) { return *Registry().GetDevice(name); }

Plan PlanOf(const std::string& uir) {
  absl::StatusOr<UOp> g = ParseUir(uir);
  EXPECT_TRUE(g.ok()) << g.status();
  CanonicalGraph c = Canonicalize(*g);
  PassManager pm = LoweringPipeline();
  absl::StatusOr<Plan> p = Lower(c.sink, static_cast<int>(c.inputs.size()), pm);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Plan{};
}

Buffer Floats(const char* device, const std::vector<float>& v) {
  Device* d = Get(device);
  Buffer b = *d->Allocate(DType::kF32, static_cast<int64_t>(v.size()));
  EXPECT_TRUE(d->CopyIn(b, v.data(), b.bytes()).ok());
  return b;
}

std::vector<float> Read(const Buffer& b) {
  std::vector<float> v(b.count());
  EXPECT_TRUE(b.device()->CopyOut(v.data(), b, b.bytes()).ok());
  return v;
}

// y = (x * 2) on `from`, copied to `to`, + 2 there
std::string TwoDevices(const char* from, const char* to) {
  return absl::StrCat("%0 = buffer 4 : dtype=f32 slot=0 device=", from,
                      "\n%1 = reshape 2.0, 1\n%2 = expand %1, 4\n%3 = mul %0, %2\n"
                      "%4 = copy %3 : device=",
                      to, "\n%5 = add %4, %2\n%6 = stage %5 : device=", to, "\n%7 = sink %6\n");
}

TEST(Executor, RunsAPlanAcrossTwoDevices) {
  Executor ex(Registry());
  Plan plan = PlanOf(TwoDevices("CPU:0", "CPU:1"));
  absl::StatusOr<std::vector<Buffer>> out = ex.Run(plan, {Floats("CPU:0", {1, 2, 3, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].device()->name(), "CPU:1");
  EXPECT_EQ(Read((*out)[0]), (std::vector<float>{4, 6, 8, 10}));
  EXPECT_EQ(ex.stats().kernels, 2);
  EXPECT_EQ(ex.stats().copies, 1);
  EXPECT_EQ(ex.stats().staged_copies, 0);  // one plugin: its own copy
  EXPECT_EQ(ex.stats().bytes_copied, 16u);
}

TEST(Executor, APlansKernelsCompileInOneCallPerDevice) {
  Executor ex(Registry());
  Plan plan = PlanOf(
      "%0 = buffer 4 : dtype=f32 slot=0 device=CPU:0\n%1 = reshape 3.0, 1\n%2 = expand %1, 4\n"
      "%3 = mul %0, %2\n%4 = add %0, %2\n%5 = max %0, %2\n%6 = stage %3 : device=CPU:0\n"
      "%7 = stage %4 : device=CPU:0\n%8 = stage %5 : device=CPU:0\n%9 = sink %6, %7, %8\n");
  ASSERT_EQ(plan.kernels().size(), 3u);
  absl::StatusOr<std::vector<Buffer>> out = ex.Run(plan, {Floats("CPU:0", {1, 2, 3, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Read((*out)[2]), (std::vector<float>{3, 3, 3, 4}));
  KernelCache::Stats s = ex.KernelsFor(Get("CPU:0")).stats();
  EXPECT_EQ(s.compile_calls, 1);
  EXPECT_EQ(s.kernels_compiled, 3);
}

TEST(Executor, CopiesBetweenPluginsGoThroughHostMemory) {
  Executor ex(Registry());
  Plan plan = PlanOf(
      "%0 = buffer 3 : dtype=f32 slot=0 device=CPU:0\n%1 = copy %0 : device=FAKE:0\n"
      "%2 = copy %1 : device=CPU:1\n%3 = stage %2 : device=CPU:1\n%4 = sink %3\n");
  ASSERT_EQ(plan.copies().size(), 2u);
  absl::StatusOr<std::vector<Buffer>> out = ex.Run(plan, {Floats("CPU:0", {7, 8, 9})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Read((*out)[0]), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(ex.stats().staged_copies, 2);
}

// x[i] = x[i] * 3, written into the input: the plan's output is its input 0
Plan InPlace() {
  Plan p;
  p.num_inputs = 1;
  p.buffers = {{DType::kF32, 4, "CPU:0", Plan::Role::kInput}};
  UOp x = UOp::Buffer(DType::kF32, 0, 4), i = UOp::Range(4, 0);
  UOp body = x.Index(i).Store(x.Index(i).Load() * UOp::Const(DType::kF32, 3.0)).End({i});
  p.steps.push_back({Plan::Kernel{UOp::Sink({body}), {0}, {0}}, "CPU:0"});
  p.outputs = {0};
  return p;
}

TEST(Executor, AnOutputMayBeAnInputUpdatedInPlace) {
  Executor ex(Registry());
  Buffer x = Floats("CPU:0", {1, 2, 3, 4});
  absl::StatusOr<std::vector<Buffer>> out = ex.Run(InPlace(), {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].SameMemory(x));
  EXPECT_EQ(Read(x), (std::vector<float>{3, 6, 9, 12}));
}

TEST(Executor, InputsAreCheckedBeforeAnythingRuns) {
  Executor ex(Registry());
  Plan plan = PlanOf(TwoDevices("CPU:0", "CPU:1"));
  EXPECT_EQ(ex.Run(plan, {Buffer()}).status().message(),
            "run plan: input 0 wants 4 x f32 on CPU:0; got no buffer");
  EXPECT_EQ(ex.Run(plan, {Floats("CPU:1", {1, 2, 3, 4})}).status().message(),
            "run plan: input 0 wants 4 x f32 on CPU:0; got 4 x f32 on CPU:1");
  EXPECT_EQ(ex.Run(plan, {}).status().message(), "run plan: 0 inputs for a plan of 1");
  EXPECT_EQ(ex.stats().kernels, 0);
}

TEST(Executor, ACopyPastTheEndIsAnErrorNamingTheStep) {
  Executor ex(Registry());
  Plan plan = PlanOf(TwoDevices("CPU:0", "CPU:1"));
  for (Plan::Step& s : plan.steps)
    if (auto* c = std::get_if<Plan::Copy>(&s.op)) c->bytes = 64;
  absl::Status s = ex.Run(plan, {Floats("CPU:0", {1, 2, 3, 4})}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(s.message(),
            "run plan: step 1 (copy CPU:0 -> CPU:1): copy to CPU:1: 64 bytes at offset 0 of a "
            "16-byte buffer");
}

TEST(Executor, ADeviceLostMidPlanFailsTheRunAndTheOthersGoOn) {
  Executor ex(Registry());
  Plan plan = PlanOf(TwoDevices("CPU:0", "CPU:2"));
  Buffer x = Floats("CPU:0", {1, 2, 3, 4});
  ASSERT_TRUE(ex.Run(plan, {x}).ok());  // CPU:2's first launch
  absl::Status lost = ex.Run(plan, {x}).status();  // its second: the device is lost
  EXPECT_EQ(lost.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(lost.message().find("DEVICE_LOST: c plugin: CPU:2 was lost during a launch"),
            std::string::npos)
      << lost;
  EXPECT_NE(lost.message().find("CPU:2"), std::string::npos) << lost;
  // every later run on it fails at once; CPU:0 and CPU:1 work as before
  EXPECT_EQ(ex.Run(plan, {x}).status().code(), absl::StatusCode::kUnavailable);
  absl::StatusOr<std::vector<Buffer>> fine =
      ex.Run(PlanOf(TwoDevices("CPU:0", "CPU:1")), {x});
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_EQ(Read((*fine)[0]), (std::vector<float>{4, 6, 8, 10}));
}

TEST(Executor, DebugTwoTimesEveryStep) {
  std::ostringstream log;
  Executor ex(Registry(), Executor::Options{2, &log});
  ASSERT_TRUE(ex.Run(PlanOf(TwoDevices("CPU:0", "CPU:1")), {Floats("CPU:0", {1, 2, 3, 4})}).ok());
  std::string text = log.str();
  EXPECT_NE(text.find("step 0 (kernel "), std::string::npos) << text;
  EXPECT_NE(text.find("step 1 (copy CPU:0 -> CPU:1): "), std::string::npos) << text;
  EXPECT_NE(text.find(" on CPU:1), loops 4: "), std::string::npos) << text;  // (its loops)
  EXPECT_NE(text.find("void k_"), std::string::npos) << text;  // each kernel's source, once
}

}  // namespace
}  // namespace uopc
