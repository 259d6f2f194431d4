// ShareTemporaries (runtime/memory_plan.h): temporaries whose lives do not overlap share an
// arena, inputs and outputs never do, nor temporaries of different devices; and a plan run
// with its temporaries sharing memory computes what it computes without.
#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include "core/uir.h"
#include "devices/registry.h"
#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "runtime/plan_cache.h"

namespace uopc {
namespace {

// A kernel step reading `reads` and writing `write` (its AST is not looked at).
Plan::Step KernelStep(std::vector<int> reads, int write) {
  reads.push_back(write);
  return {Plan::Kernel{UOp(), reads, {write}}, "CPU:0"};
}

TEST(ShareTemporaries, TemporariesWhoseLivesDoNotOverlapShareAnArena) {
  Plan p;
  p.num_inputs = 1;
  p.buffers = {{DType::kF32, 16, "CPU:0", Plan::Role::kInput},
               {DType::kF32, 16, "CPU:0", Plan::Role::kTemp},   // 1: steps 0-1
               {DType::kF32, 16, "CPU:0", Plan::Role::kTemp},   // 2: steps 1-2
               {DType::kI32, 32, "CPU:0", Plan::Role::kTemp},   // 3: steps 2-3, as 1 is done
               {DType::kF32, 16, "CPU:1", Plan::Role::kTemp},   // 4: steps 3-4, another device
               {DType::kF32, 8, "CPU:0", Plan::Role::kTemp},    // 5: steps 4-5, 2 is done
               {DType::kF32, 16, "CPU:0", Plan::Role::kOutput}};
  p.steps = {KernelStep({0}, 1), KernelStep({1}, 2), KernelStep({2}, 3),
             KernelStep({3}, 4), KernelStep({4}, 5), KernelStep({5}, 6)};
  p.outputs = {6};
  ShareTemporaries(&p);
  ASSERT_EQ(p.arena_of.size(), p.buffers.size());
  EXPECT_EQ(p.arena_of[0], -1);  // an input
  EXPECT_EQ(p.arena_of[6], -1);  // an output
  EXPECT_EQ(p.arena_of[1], p.arena_of[3]);
  EXPECT_NE(p.arena_of[1], p.arena_of[2]);
  EXPECT_NE(p.arena_of[4], p.arena_of[1]);
  EXPECT_NE(p.arena_of[4], p.arena_of[2]);
  EXPECT_EQ(p.arena_of[5], p.arena_of[2]);  // (it fits there: the smallest free that holds it)
  ASSERT_EQ(p.arenas.size(), 3u);
  EXPECT_EQ(p.arenas[p.arena_of[1]].bytes, 128u);  // grown to the larger of its two
  EXPECT_EQ(p.arenas[p.arena_of[4]].device, "CPU:1");
  EXPECT_EQ(p.OwnBytes(), 128u + 64u + 64u + 64u);  // three arenas and the output
}

// x * 2 + 1, * 3, + 4, each staged: three temporaries in a chain, then the output.
constexpr char kChain[] = R"(%0 = buffer 1024 : dtype=f32 slot=0 device=CPU:0
%1 = reshape 2.0, 1
%2 = expand %1, 1024
%3 = mul %0, %2
%4 = stage %3 : device=CPU:0
%5 = reshape 1.0, 1
%6 = expand %5, 1024
%7 = add %4, %6
%8 = stage %7 : device=CPU:0
%9 = reshape 3.0, 1
%10 = expand %9, 1024
%11 = mul %8, %10
%12 = stage %11 : device=CPU:0
%13 = reshape 4.0, 1
%14 = expand %13, 1024
%15 = add %12, %14
%16 = stage %15 : device=CPU:0
%17 = sink %16
)";

TEST(ShareTemporaries, APlanComputesTheSameWithItsTemporariesSharingMemory) {
  absl::StatusOr<UOp> g = ParseUir(kChain);
  ASSERT_TRUE(g.ok()) << g.status();
  CanonicalGraph c = Canonicalize(*g);
  PassManager pm = LoweringPipeline();
  absl::StatusOr<Plan> plain = Lower(c.sink, static_cast<int>(c.inputs.size()), pm);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_GE(plain->kernels().size(), 3u);
  Plan shared = *plain;
  ShareTemporaries(&shared);
  EXPECT_LT(shared.OwnBytes(), plain->OwnBytes());
  Device* d = *DeviceRegistry::Get().GetDevice("CPU:0");
  std::vector<float> x(1024);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i);
  Buffer in = *d->Allocate(DType::kF32, 1024);
  ASSERT_TRUE(d->CopyIn(in, x.data(), in.bytes()).ok());
  Executor ex(DeviceRegistry::Get());
  std::vector<std::vector<float>> got;
  for (const Plan* p : {&*plain, &shared}) {
    absl::StatusOr<std::vector<Buffer>> out = ex.Run(*p, {in});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<float> v(1024);
    ASSERT_TRUE(d->CopyOut(v.data(), (*out)[0], 4096).ok());
    got.push_back(v);
  }
  EXPECT_EQ(got[0], got[1]);
  EXPECT_EQ(got[1][3], (0.75f * 2 + 1) * 3 + 4);
}

}  // namespace
}  // namespace uopc
