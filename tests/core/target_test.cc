// core/target.h: the text form reads back, refusals name what is wrong, derived facts.
#include "core/target.h"

#include "gtest/gtest.h"

namespace uopc {
namespace {

TEST(Target, ReferenceCpuText) {
  EXPECT_EQ(Target::ReferenceCpu().ToString(),
            "class=cpu arch=x86_64 features=avx,avx2,avx512bw,avx512cd,avx512dq,avx512f,"
            "avx512vl,fma vector_bits=512 registers=32 cores=1 l1d=48K/12 l2=1M l3=0 matrix=");
}

TEST(Target, TextRoundTrips) {
  Target gpu = Target::ReferenceGpu();
  gpu.arch = "sm_90";
  gpu.cores = 132;
  gpu.l2_bytes = 50 << 20;
  gpu.shared_per_block = 227 << 10;
  gpu.matrix_units = {{16, 8, 16, DType::kF16, DType::kF32}, {16, 8, 16, DType::kBF16, DType::kF32}};
  Target cpu = Target::ReferenceCpu();
  cpu.features = {"amx_bf16", "amx_tile", "avx512_bf16", "avx512f"};
  cpu.l1d_bytes = 49152 + 3;  // not a whole K: bytes
  cpu.l3_bytes = int64_t{3} << 30;
  cpu.matrix_units = {{16, 16, 32, DType::kBF16, DType::kF32}};
  for (const Target& t : {Target::ReferenceCpu(), Target::ReferenceGpu(), gpu, cpu}) {
    absl::StatusOr<Target> back = ParseTarget(t.ToString());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, t) << t.ToString() << "\n" << back->ToString();
  }
  EXPECT_EQ(gpu.ToString(),
            "class=gpu arch=sm_90 features= registers=255 cores=132 l1d=0/0 l2=50M l3=0 warp=32 "
            "threads_per_block=1024 shared_per_block=227K matrix=16x8x16:f16->f32,16x8x16:bf16->f32");
}

TEST(Target, KeysLeftOutKeepTheReference) {
  absl::StatusOr<Target> t = ParseTarget("class=gpu arch=sm_80");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->arch, "sm_80");
  EXPECT_EQ(t->warp, 32);
  EXPECT_EQ(t->threads_per_block, 1024);
  absl::StatusOr<Target> c = ParseTarget("class=cpu features=sse2,avx2 vector_bits=256");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->features, (std::vector<std::string>{"avx2", "sse2"}));  // sorted
  EXPECT_EQ(c->Lanes(DType::kF32), 8);
}

TEST(Target, RefusesBadText) {
  auto message = [](absl::string_view text) {
    absl::StatusOr<Target> t = ParseTarget(text);
    EXPECT_FALSE(t.ok()) << text;
    return t.ok() ? std::string() : std::string(t.status().message());
  };
  EXPECT_NE(message("").find("does not begin with class=cpu or class=gpu"), std::string::npos);
  EXPECT_NE(message("arch=sm_90 class=gpu").find("does not begin with class"), std::string::npos);
  EXPECT_NE(message("class=tpu").find("class=cpu or class=gpu"), std::string::npos);
  EXPECT_NE(message("class=cpu warps=32").find("unknown key \"warps\""), std::string::npos);
  EXPECT_NE(message("class=cpu registers=-1").find("\"registers=-1\" is not a valid value"),
            std::string::npos);
  EXPECT_NE(message("class=cpu l1d=48K").find("\"l1d=48K\""), std::string::npos);
  EXPECT_NE(message("class=cpu l2=2X").find("\"l2=2X\""), std::string::npos);
  EXPECT_NE(message("class=cpu l2=99999999999G").find("\"l2=99999999999G\""), std::string::npos);
  EXPECT_NE(message("class=cpu vector_bits").find("is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(message("class=gpu matrix=16x8:f16->f32").find("expected MxNxK:INPUT->ACCUMULATOR"),
            std::string::npos);
  EXPECT_NE(message("class=gpu matrix=16x8x16:f17->f32").find("16x8x16:f17->f32"),
            std::string::npos);
  EXPECT_NE(message("class=cpu arch=").find("\"arch=\""), std::string::npos);
}

TEST(Target, DerivedFacts) {
  const Target cpu = Target::ReferenceCpu();
  EXPECT_TRUE(cpu.IsCpu());
  EXPECT_TRUE(cpu.Has("avx512f"));
  EXPECT_FALSE(cpu.Has("amx_tile"));
  EXPECT_EQ(cpu.Lanes(DType::kF32), 16);
  EXPECT_EQ(cpu.Lanes(DType::kBF16), 32);
  EXPECT_EQ(cpu.L1SetStride(), 4096);  // 48 KiB, 12 ways
  const Target gpu = Target::ReferenceGpu();
  EXPECT_TRUE(gpu.IsGpu());
  EXPECT_EQ(gpu.Lanes(DType::kF32), 1);  // (a thread's values are scalars)
  EXPECT_EQ(gpu.L1SetStride(), 0);
}

}  // namespace
}  // namespace uopc
