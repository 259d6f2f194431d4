// MapToLaunchDims: the mapped kernel computes what the kernel did (both run by the
// reference interpreter, which runs global and local ranges as loops), and its dims cover
// every output element once.
#include "passes/launch_dims.h"

#include <random>

#include <gtest/gtest.h>

#include "core/interpreter.h"
#include "core/uir.h"
#include "passes/linearize.h"
#include "passes/pipeline.h"
#include "runtime/plan.h"
#include "runtime/plan_cache.h"

namespace uopc {
namespace {

// The kernels of a tensor graph, lowered by the standard pipeline.
std::vector<UOp> Kernels(const std::string& uir) {
  CanonicalGraph g = Canonicalize(*ParseUir(uir));
  PassManager pm = LoweringPipeline();
  absl::StatusOr<Plan> p = Lower(g.sink, static_cast<int>(g.inputs.size()), pm);
  EXPECT_TRUE(p.ok()) << p.status();
  std::vector<UOp> out;
  if (p.ok())
    for (const Plan::Kernel* k : p->kernels()) out.push_back(k->ast);
  return out;
}

// Runs `kernel` on buffers filled from `seed`; the contents of every buffer afterwards.
std::vector<std::vector<float>> Execute(const UOp& kernel, uint32_t seed) {
  KernelSignature sig = *SignatureOf(kernel);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<std::vector<float>> data;
  std::vector<BufferRef> refs;
  for (const KernelSignature::Buffer& b : sig.buffers) data.emplace_back(b.size);
  for (auto& d : data)
    for (float& x : d) x = u(rng);
  for (size_t s = 0; s < data.size(); ++s)
    refs.push_back({data[s].data(), DType::kF32, static_cast<int64_t>(data[s].size())});
  absl::StatusOr<std::vector<UOp>> program = Linearize(kernel);
  EXPECT_TRUE(program.ok()) << program.status();
  if (program.ok()) EXPECT_TRUE(Interpret(*program, refs).ok());
  return data;
}

struct Case {
  const char* name;
  std::string uir;
};

const Case kCases[] = {
    {"elementwise 4x8",
     "%0 = buffer 32 : dtype=f32 slot=0\n%1 = reshape %0, 4, 8\n%2 = mul %1, %1\n%3 = sink %2\n"},
    {"matmul 4x8 @ 8x3",
     "%0 = buffer 32 : dtype=f32 slot=0\n%1 = buffer 24 : dtype=f32 slot=1\n"
     "%2 = reshape %0, 4, 8, 1\n%3 = expand %2, 4, 8, 3\n%4 = reshape %1, 1, 8, 3\n"
     "%5 = expand %4, 4, 8, 3\n%6 = mul %3, %5\n%7 = reduce %6 : op=add axes=1\n"
     "%8 = reshape %7, 4, 3\n%9 = sink %8\n"},
    {"row max of 31 rows",
     "%0 = buffer 155 : dtype=f32 slot=0\n%1 = reshape %0, 31, 5\n"
     "%2 = reduce %1 : op=max axes=1\n%3 = sink %2\n"},
};

TEST(LaunchDims, TheMappedKernelComputesWhatTheKernelDid) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    for (const UOp& k : Kernels(c.uir)) {
      LaunchDims dims;
      absl::StatusOr<UOp> mapped = MapToLaunchDims(k, LaunchLimits{8, 1 << 20}, &dims);
      ASSERT_TRUE(mapped.ok()) << mapped.status();
      EXPECT_NE(*mapped, k);  // something was mapped
      EXPECT_EQ(Execute(*mapped, 7), Execute(k, 7));
    }
  }
}

TEST(LaunchDims, BlocksDivideTheElementsAndRespectTheLimits) {
  auto dims_of = [](const std::string& uir, LaunchLimits limits) {
    LaunchDims d;
    EXPECT_TRUE(MapToLaunchDims(Kernels(uir)[0], limits, &d).ok());
    return std::make_pair(d.global[0], d.local[0]);
  };
  EXPECT_EQ(dims_of(kCases[0].uir, {8, 1 << 20}), std::make_pair(4u, 8u));   // 32 = 4 x 8
  EXPECT_EQ(dims_of(kCases[0].uir, {256, 1 << 20}), std::make_pair(1u, 32u));
  EXPECT_EQ(dims_of(kCases[2].uir, {8, 1 << 20}), std::make_pair(31u, 1u));  // 31 is prime
  EXPECT_EQ(dims_of(kCases[0].uir, {8, 2}), std::make_pair(1u, 1u));  // too many blocks: unmapped
}

TEST(LaunchDims, AKernelOfRunTimeLengthIsLeftAsItWas) {
  UOp n = UOp::Var("n", 1, 8), out = UOp::Buffer(DType::kI32, 0, 8);
  UOp i = UOp::Range(n, 0);
  UOp k = UOp::Sink({out.Index(i).Store(i * 2).End({i})});
  LaunchDims d;
  EXPECT_EQ(*MapToLaunchDims(k, {}, &d), k);
  EXPECT_EQ(d, LaunchDims{});
}

}  // namespace
}  // namespace uopc
