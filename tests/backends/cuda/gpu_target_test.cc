// backends/cuda/gpu_target.h: a named architecture's target, and a present GPU's from the
// driver's attributes over its architecture's table row.
#include "backends/cuda/gpu_target.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace uopc {
namespace {

TEST(GpuTarget, Sm90ByName) {
  absl::StatusOr<Target> t = NamedGpuTarget("sm_90");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->ToString(),
            "class=gpu arch=sm_90 features= registers=255 cores=132 l1d=0/0 l2=50M l3=0 warp=32 "
            "threads_per_block=1024 shared_per_block=227K "
            "matrix=16x8x16:f16->f32,16x8x16:bf16->f32,16x8x8:f32->f32");
  EXPECT_EQ(NamedGpuTarget("90")->arch, "sm_90");
  EXPECT_EQ(NamedGpuTarget("sm_75")->matrix_units,
            (std::vector<MatrixUnit>{{16, 8, 8, DType::kF16, DType::kF32}}));
}

TEST(GpuTarget, UnknownNamesAreRefusedListingTheKnown) {
  for (const char* bad : {"sm_91", "sm_", "x86_64", ""})
    EXPECT_EQ(NamedGpuTarget(bad).status().message(),
              absl::StrCat("cuda: no target named \"", bad,
                           "\" (known: sm_70, sm_75, sm_80, sm_86, sm_89, sm_90)"));
}

TEST(GpuTarget, APresentGpuKeepsItsArchitecturesUnitsWithItsOwnFigures) {
  // an H200 as the driver reports it, and a newer arch than the table knows
  const Target h200 = GpuTarget({.arch = 90, .multiprocessors = 132, .warp = 32,
                                 .threads_per_block = 1024, .l2_bytes = 60 << 20,
                                 .shared_per_block = 232448});
  EXPECT_EQ(h200.l2_bytes, 60 << 20);
  EXPECT_EQ(h200.shared_per_block, 232448);
  EXPECT_EQ(h200.matrix_units, NamedGpuTarget("sm_90")->matrix_units);
  const Target newer = GpuTarget({.arch = 120, .multiprocessors = 84});
  EXPECT_EQ(newer.arch, "sm_120");
  EXPECT_EQ(newer.cores, 84);
  EXPECT_EQ(newer.matrix_units, NamedGpuTarget("sm_90")->matrix_units);
  EXPECT_EQ(newer.threads_per_block, 1024);  // (not reported: the table's)
  EXPECT_EQ(GpuTarget({.arch = 60}).matrix_units.size(), 0u);  // (below the table: none)
}

}  // namespace
}  // namespace uopc
