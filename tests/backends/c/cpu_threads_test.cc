// Kernels split over the C device's threads (UOPC_THREADS=3 here: uneven chunks on any
// machine): the device renders a large kernel with its outer loop as a global range, and
// the chunks, run at once on the pool, give the bits one thread gives (each output is one
// thread's, summed in the same order).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"

#include "core/exp2_f32.h"
#include "core/serialize.h"
#include "core/uir.h"
#include "frontend/tensor.h"
#include "passes/pipeline.h"
#include "runtime/plan.h"
#include "runtime/plan_cache.h"
#include "tests/testing/matmul_bits.h"

namespace uopc {
namespace {

TEST(CpuThreads, ALargeKernelIsRenderedInChunks) {
  // a 96x160 @ 160x200 matmul: 3M multiply-adds
  std::string uir =
      "%0 = buffer 15360 : dtype=f32 slot=0\n%1 = buffer 32000 : dtype=f32 slot=1\n"
      "%2 = reshape %0, 96, 160, 1\n%3 = expand %2, 96, 160, 200\n%4 = reshape %1, 1, 160, 200\n"
      "%5 = expand %4, 96, 160, 200\n%6 = mul %3, %5\n%7 = reduce %6 : op=add axes=1\n"
      "%8 = reshape %7, 96, 200\n%9 = sink %8\n";
  CanonicalGraph g = Canonicalize(*ParseUir(uir));
  PassManager pm = LoweringPipeline();
  absl::StatusOr<Plan> p = Lower(g.sink, static_cast<int>(g.inputs.size()), pm);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->kernels().size(), 1u);
  absl::StatusOr<RenderedKernel> r =
      DefaultDevice()->Render(SerializeGraph(p->kernels()[0]->ast), "k");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dims.global[0], 24u);  // the 96 rows, in tiles of 4
  EXPECT_NE(r->source.find("gchunk"), std::string::npos) << r->source;
  // with the chunk's end an int (compared with a long long, gcc cannot count the iterations
  // under -fwrapv: an add of 16M floats ran at 8 GB/s instead of 44), and telling gcc that
  // the chunk lies in the loop (else it cannot prove that the indices do not wrap, and reads
  // rows by gathers: a matmul at 5 GFLOP/s instead of 170)
  EXPECT_NE(r->source.find("_end = (long long)24 * (gchunk + 1) / gchunks; "), std::string::npos)
      << r->source;
  EXPECT_NE(r->source.find(" >= (long long)24) __builtin_unreachable();"), std::string::npos)
      << r->source;
}

// The device's kind says how many threads run its kernels (the kernel search keeps its
// choices under it: a kernel's fastest form depends on them).
TEST(CpuThreads, TheKindNamesTheThreads) {
  const std::string& kind = DefaultDevice()->kind();
  EXPECT_TRUE(absl::EndsWith(kind, " cores, 3 threads")) << kind;
}

// A matmul in register tiles (8 x 48), its blocks of columns split over the threads: the
// bits of one plain loop.
TEST(CpuThreads, RegisterTilesGiveTheBitsOfOneThread) { testing::ExpectMatmulBits(64, 72, 192); }

TEST(CpuThreads, ChunksGiveTheBitsOfOneThread) {
  const int M = 96, K = 160, N = 200;
  std::vector<float> a(M * K), b(K * N);
  for (int i = 0; i < M * K; ++i) a[i] = std::sin(0.37f * i);
  for (int i = 0; i < K * N; ++i) b[i] = std::cos(0.11f * i);
  Tensor ta = Tensor::FromVector(a, {M, K}), tb = Tensor::FromVector(b, {K, N});
  std::vector<float> c = ta.Matmul(tb).ToVector<float>();
  std::vector<float> ct = ta.Matmul(tb.Transpose().Realize().Transpose()).ToVector<float>();
  ASSERT_EQ(c.size(), static_cast<size_t>(M * N));
  const bool fused = testing::KernelsFuseMultiplyAdd();
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0;
      for (int k = 0; k < K; ++k)
        s = fused ? std::fma(a[i * K + k], b[k * N + j], s) : s + a[i * K + k] * b[k * N + j];
      ASSERT_EQ(c[i * N + j], s) << i << ", " << j;
      ASSERT_EQ(ct[i * N + j], s) << i << ", " << j;
    }
  std::vector<float> e = (ta.Exp() * 2 + 1).ToVector<float>();
  for (int i = 0; i < M * K; ++i) {  // (exp2 of a float: core/exp2_f32.h's)
    const float p = Exp2F32(a[i] * 1.44269504f);
    ASSERT_EQ(e[i], p * 2 + 1) << i;
  }
}

// b's rows 4 KiB apart: the matmul reads a padded copy of b (kernelize), the bits of one
// plain loop.
TEST(CpuThreads, AMatmulByAPaddedCopyGivesThePlainLoopsBits) {
  testing::ExpectMatmulBits(48, 64, 1024);
}

}  // namespace
}  // namespace uopc
