// Kernels of small tensor graphs (an elementwise op, a matmul, a row reduction) lowered by
// the standard pipeline, and a run of one under the reference interpreter: what the tests
// of kernel-to-kernel passes (launch dims, threads) compare before and after.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/interpreter.h"
#include "core/uir.h"
#include "passes/linearize.h"
#include "passes/pipeline.h"
#include "runtime/plan.h"
#include "runtime/plan_cache.h"

namespace uopc::testing {

// The kernels of a tensor graph, lowered by the standard pipeline.
inline std::vector<UOp> Kernels(const std::string& uir) {
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
inline std::vector<std::vector<float>> Execute(const UOp& kernel, uint32_t seed) {
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

inline const Case kCases[] = {
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

}  // namespace uopc::testing
