// The CUDA plugin's supplied matmul kernels without a GPU: which a GPU gets, which variant
// and grid a call launches, and every variant compiled by NVRTC for sm_80 and sm_90 to fit
// its 256 threads (no spills, no stack). What they compute is checked on a GPU, by the
// conformance suite's `supplied` section (tools/gpu_check.sh).
#include "backends/cuda/matmul_kernels.h"

#include <gtest/gtest.h>

#include "absl/strings/match.h"

#include "backends/cuda/nvrtc.h"

namespace uopc::cuda {
namespace {

TEST(CudaMatmulKernels, TensorCoresFromSm80) {
  auto names = [](int arch) {
    std::vector<std::string> out;
    for (const SuppliedKernel& k : MatmulKernels(arch)) out.push_back(k.name);
    return out;
  };
  EXPECT_EQ(names(70), std::vector<std::string>{"cuda_sgemm"});
  EXPECT_EQ(names(90),
            (std::vector<std::string>{"cuda_sgemm", "cuda_mma_bf16_to_f32", "cuda_mma_bf16_to_bf16",
                                      "cuda_mma_f16_to_f32", "cuda_mma_f16_to_f16"}));
  for (const SuppliedKernel& k : MatmulKernels(90)) {
    EXPECT_EQ(k.op, "matmul");
    EXPECT_EQ(k.a, k.b);
  }
}

MatmulParams RowMajor(int64_t m, int64_t n, int64_t k) {
  MatmulParams p;
  p.m = m, p.n = n, p.k = k;
  p.a_row = k, p.a_col = 1, p.b_row = n, p.b_col = 1, p.out_row = n;
  return p;
}

TEST(CudaMatmulKernels, AVariantPerLayoutAndTheGridCoversTheOutput) {
  MatmulParams p = RowMajor(4096, 4096, 4096);
  absl::StatusOr<MatmulLaunch> l = PlanMatmulLaunch("cuda_sgemm", p, 132);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->entry, "cuda_sgemm_128_00");
  EXPECT_EQ(l->grid, (std::array<uint32_t, 3>{32, 32, 1}));
  EXPECT_EQ(l->block, (std::array<uint32_t, 3>{256, 1, 1}));
  // a transposed (unit stride along i), b transposed (along the sum)
  p.a_row = 1, p.a_col = 4096, p.b_row = 1, p.b_col = 4096;
  l = PlanMatmulLaunch("cuda_mma_bf16_to_f32", p, 132);
  EXPECT_EQ(l->entry, "cuda_mma_bf16_to_f32_11_n256");  // (128 x 256 tiles: 512 blocks)
  EXPECT_EQ(l->grid, (std::array<uint32_t, 3>{16, 32, 1}));
  EXPECT_EQ(l->shared_bytes, 3 * (128 * 40 + 256 * 40) * 2u);  // (3 stages: past 48 KiB)
  p.b_row = 4096, p.b_col = 1;
  l = PlanMatmulLaunch("cuda_mma_bf16_to_bf16", p, 132, "n128");
  EXPECT_EQ(l->entry, "cuda_mma_bf16_to_bf16_10_n128");
  EXPECT_EQ(l->grid, (std::array<uint32_t, 3>{32, 32, 1}));
  EXPECT_EQ(l->shared_bytes, 4 * 20480u);
  EXPECT_EQ(PlanMatmulLaunch("cuda_mma_bf16_to_bf16", p, 132, "x").status().code(),
            absl::StatusCode::kInvalidArgument);
  // too few 128 x 256 tiles: 128 x 128 ones
  EXPECT_EQ(PlanMatmulLaunch("cuda_mma_bf16_to_bf16", RowMajor(1024, 1024, 64), 132)->entry,
            "cuda_mma_bf16_to_bf16_00_n128");
  // too few 128 x 128 tiles to fill the GPU: 64 x 64 ones; odd sizes round up; batches in z
  MatmulParams small = RowMajor(1000, 130, 64);
  small.batch = 3, small.batch2 = 5;
  l = PlanMatmulLaunch("cuda_sgemm", small, 132);
  EXPECT_EQ(l->entry, "cuda_sgemm_64_00");
  EXPECT_EQ(l->grid, (std::array<uint32_t, 3>{3, 16, 15}));
  EXPECT_EQ(PlanMatmulLaunch("cuda_mma_f16_to_f16", p, 132)->entry, "cuda_mma_f16_to_f16_10_n256");
  EXPECT_EQ(PlanMatmulLaunch("cuda_hgemm", p, 132).status().code(), absl::StatusCode::kNotFound);
  // more rows than a grid holds
  EXPECT_EQ(PlanMatmulLaunch("cuda_sgemm", RowMajor(int64_t{1} << 33, 8, 8), 132).status().code(),
            absl::StatusCode::kOutOfRange);
}

void FitsForArch(int arch) {
  absl::StatusOr<const Nvrtc*> nvrtc = Nvrtc::Load();
  if (!nvrtc.ok()) GTEST_SKIP() << "no NVRTC here: " << nvrtc.status().message();
  absl::StatusOr<Nvrtc::Binary> b =
      (*nvrtc)->Compile(MatmulKernelsSource(), arch, {"-w", "--ptxas-options=-v"});
  ASSERT_TRUE(b.ok()) << b.status().message().substr(0, 3000);
  EXPECT_FALSE(b->ptx);
  std::vector<std::string> seen;
  for (const PtxasInfo& k : ParsePtxasInfo(b->log)) {
    seen.push_back(k.function);
    EXPECT_LE(k.registers, 255) << k.function;
    EXPECT_EQ(k.spill_store_bytes + k.spill_load_bytes, 0) << k.function;
    EXPECT_EQ(k.stack_bytes, 0) << k.function;
    std::printf("sm_%d %s: %d registers\n", arch, k.function.c_str(), k.registers);
  }
  std::vector<std::string> want = MatmulEntries();
  std::sort(want.begin(), want.end());
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, want);
}

TEST(CudaMatmulKernels, EveryVariantFitsSm90) { FitsForArch(90); }
TEST(CudaMatmulKernels, EveryVariantFitsSm80) { FitsForArch(80); }

}  // namespace
}  // namespace uopc::cuda
