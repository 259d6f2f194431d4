// SuppliedKernels (passes/supplied_kernels.h): a plain matmul becomes a MATMUL call
// (core/matmul_call.h) where the target lists a matmul kernel of its dtypes and its work
// reaches the kernel's min_flops, with the strides of the layout it reads (a transposed b
// too); other kernels, and every kernel of a target without such a kernel, are generated
// as before.
#include "passes/supplied_kernels.h"

#include <vector>

#include <gtest/gtest.h>

#include "core/matmul_call.h"
#include "passes/pipeline.h"
#include "runtime/plan.h"
#include "runtime/plan_cache.h"

namespace uopc {
namespace {

UOp Dims(Ops op, UOp x, std::vector<int64_t> dims) {
  std::vector<UOp> src{x};
  for (int64_t d : dims) src.push_back(UOp::Int(d));
  return UOp::Derived(op, src);
}

// a (m, k) @ b (k, n) from buffers 0 and 1 of `t`; b stored as (n, k) when `b_transposed`.
UOp Matmul(int64_t m, int64_t k, int64_t n, DType t = DType::kF32, bool b_transposed = false) {
  UOp a = Dims(Ops::RESHAPE, UOp::Buffer(t, 0, m * k), {m, k, 1});
  UOp b = b_transposed
              ? UOp::Derived(Ops::PERMUTE, {Dims(Ops::RESHAPE, UOp::Buffer(t, 1, k * n), {n, k})},
                             Axes{{1, 0}})
              : Dims(Ops::RESHAPE, UOp::Buffer(t, 1, k * n), {k, n});
  b = Dims(Ops::RESHAPE, b, {1, k, n});
  auto f32 = [&](UOp x) { return t == DType::kF32 ? x : x.Cast(DType::kF32); };
  UOp prod = f32(Dims(Ops::EXPAND, a, {m, k, n})) * f32(Dims(Ops::EXPAND, b, {m, k, n}));
  return Dims(Ops::RESHAPE, UOp::Derived(Ops::REDUCE, {prod}, ReduceArg{Ops::ADD, {1}}), {m, n});
}

Target WithMatmul(DType in, DType out, int64_t min_flops = 0) {
  Target t = Target::ReferenceCpu();
  t.kernels.push_back({"vendor_matmul", "matmul", in, in, out, min_flops});
  return t;
}

// The plan's kernels for `root`, lowered for `t`.
std::vector<UOp> Kernels(const UOp& root, const Target& t) {
  PassContext ctx;
  ctx.default_target = t;
  CanonicalGraph c = Canonicalize(UOp::Sink({root}));
  PassManager pm = LoweringPipeline();
  absl::StatusOr<Plan> plan = Lower(c.sink, static_cast<int>(c.inputs.size()), pm, ctx);
  EXPECT_TRUE(plan.ok()) << plan.status();
  std::vector<UOp> out;
  if (plan.ok())
    for (const Plan::Kernel* k : plan->kernels()) out.push_back(k->ast);
  return out;
}

MatmulParams ParamsOf(const UOp& call) {
  absl::StatusOr<MatmulParams> p = EvalMatmulParams(call, {});
  EXPECT_TRUE(p.ok()) << p.status();
  return p.value_or(MatmulParams{});
}

TEST(SuppliedKernels, AMatmulBecomesACallWithItsLayout) {
  std::vector<UOp> ks = Kernels(Matmul(64, 32, 48), WithMatmul(DType::kF32, DType::kF32));
  ASSERT_EQ(ks.size(), 1u);
  ASSERT_TRUE(ks[0].is(Ops::MATMUL)) << ks[0].Toposort().size();
  const MatmulParams p = ParamsOf(ks[0]);
  EXPECT_EQ(p.Values(), (MatmulParams{1, 64, 48, 32, 0, 0, 32, 1, 0, 0, 48, 1, 0, 0, 48}.Values()));
  // the out buffer first, then a and b
  EXPECT_EQ(ks[0].src(0).arg().Get<ParamArg>().size, 64 * 48);
  EXPECT_EQ(ks[0].src(1).arg().Get<ParamArg>().size, 64 * 32);
}

TEST(SuppliedKernels, ATransposedOperandIsReadWithItsStrides) {
  std::vector<UOp> ks =
      Kernels(Matmul(64, 32, 48, DType::kF32, true), WithMatmul(DType::kF32, DType::kF32));
  ASSERT_EQ(ks.size(), 1u);
  ASSERT_TRUE(ks[0].is(Ops::MATMUL));
  const MatmulParams p = ParamsOf(ks[0]);
  EXPECT_EQ(p.b_row, 1);  // along the sum: contiguous
  EXPECT_EQ(p.b_col, 32);
}

TEST(SuppliedKernels, HalvesReadAsF32MatchAKernelOfHalves) {
  std::vector<UOp> ks =
      Kernels(Matmul(64, 64, 64, DType::kBF16), WithMatmul(DType::kBF16, DType::kF32));
  ASSERT_EQ(ks.size(), 1u);
  ASSERT_TRUE(ks[0].is(Ops::MATMUL));
  EXPECT_EQ(ks[0].src(1).dtype(), DType::kBF16);
  EXPECT_EQ(ks[0].src(0).dtype(), DType::kF32);
}

TEST(SuppliedKernels, LoopsWalkedAsOneAreOneAxis) {
  const Target t = WithMatmul(DType::kF32, DType::kF32);
  {  // a weight's gradient, x^T @ dY, summed over a batch's sequences and their tokens
    const int64_t b = 4, s = 16, k = 32, n = 24;
    UOp x =
        Dims(Ops::EXPAND, Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, b * s * k), {b, s, k, 1}),
             {b, s, k, n});
    UOp dy =
        Dims(Ops::EXPAND, Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, b * s * n), {b, s, 1, n}),
             {b, s, k, n});
    UOp dw = Dims(Ops::RESHAPE, UOp::Derived(Ops::REDUCE, {x * dy}, ReduceArg{Ops::ADD, {0, 1}}),
                  {k, n});
    std::vector<UOp> ks = Kernels(dw, t);
    ASSERT_EQ(ks.size(), 1u);
    ASSERT_TRUE(ks[0].is(Ops::MATMUL));
    EXPECT_EQ(ParamsOf(ks[0]).Values(),
              (MatmulParams{1, k, n, b * s, 0, 0, 1, k, 0, 0, n, 1, 0, 0, n}.Values()));
  }
  {  // a matmul per (batch, head)
    const int64_t b = 2, h = 3, m = 16, k = 8, n = 12;
    UOp q = Dims(Ops::EXPAND,
                 Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, b * h * m * k), {b, h, m, k, 1}),
                 {b, h, m, k, n});
    UOp v = Dims(Ops::EXPAND,
                 Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, b * h * k * n), {b, h, 1, k, n}),
                 {b, h, m, k, n});
    UOp out = Dims(Ops::RESHAPE, UOp::Derived(Ops::REDUCE, {q * v}, ReduceArg{Ops::ADD, {3}}),
                   {b, h, m, n});
    std::vector<UOp> ks = Kernels(out, t);
    ASSERT_EQ(ks.size(), 1u);
    ASSERT_TRUE(ks[0].is(Ops::MATMUL));
    EXPECT_EQ(ParamsOf(ks[0]).Values(),
              (MatmulParams{b * h, m, n, k, 0, m * k, k, 1, 0, k * n, n, 1, 0, m * n, n}.Values()));
  }
}

TEST(SuppliedKernels, SequencesAroundInterleavedHeadsAreTwoBatches) {
  // q stored (b, m, h, k), each row holding every head, read per (sequence, head)
  const int64_t b = 2, h = 3, m = 16, k = 8, n = 12;
  UOp q = UOp::Derived(
      Ops::PERMUTE, {Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 0, b * m * h * k), {b, m, h, k})},
      Axes{{0, 2, 1, 3}});
  q = Dims(Ops::EXPAND, Dims(Ops::RESHAPE, q, {b, h, m, k, 1}), {b, h, m, k, n});
  UOp v = Dims(Ops::EXPAND,
               Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 1, b * h * k * n), {b, h, 1, k, n}),
               {b, h, m, k, n});
  UOp out = Dims(Ops::RESHAPE, UOp::Derived(Ops::REDUCE, {q * v}, ReduceArg{Ops::ADD, {3}}),
                 {b, h, m, n});
  std::vector<UOp> ks = Kernels(out, WithMatmul(DType::kF32, DType::kF32));
  ASSERT_EQ(ks.size(), 1u);
  ASSERT_TRUE(ks[0].is(Ops::MATMUL));
  MatmulParams want{h, m, n, k, 0, k, h * k, 1, 0, k * n, n, 1, 0, m * n, n};
  want.batch2 = b, want.a_batch2 = m * h * k, want.b_batch2 = h * k * n,
  want.out_batch2 = h * m * n;
  EXPECT_EQ(ParamsOf(ks[0]).Values(), want.Values());
}

TEST(SuppliedKernels, OtherwiseTheKernelIsGenerated) {
  auto generated = [](const std::vector<UOp>& ks) {
    for (const UOp& k : ks)
      if (k.is(Ops::MATMUL)) return false;
    return !ks.empty();
  };
  EXPECT_TRUE(generated(Kernels(Matmul(64, 32, 48), Target::ReferenceCpu())));  // no kernel
  EXPECT_TRUE(generated(Kernels(Matmul(64, 32, 48), WithMatmul(DType::kF32, DType::kF32,
                                                               2 * 64 * 32 * 48 + 1))));  // small
  EXPECT_TRUE(generated(Kernels(Matmul(64, 32, 48), WithMatmul(DType::kBF16, DType::kF32))));
  // a matmul and an add in one kernel: not a plain matmul
  UOp bias =
      Dims(Ops::EXPAND, Dims(Ops::RESHAPE, UOp::Buffer(DType::kF32, 2, 48), {1, 48}), {64, 48});
  EXPECT_TRUE(generated(Kernels(Matmul(64, 32, 48) + bias, WithMatmul(DType::kF32, DType::kF32))));
}

TEST(SuppliedKernels, ATargetWithKernelsReadsBackFromItsTextForm) {
  const Target t = WithMatmul(DType::kBF16, DType::kBF16, 524288);
  absl::StatusOr<Target> back = ParseTarget(t.ToString());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
  EXPECT_NE(t.ToString().find("kernels=vendor_matmul:matmul:bf16*bf16->bf16:524288"),
            std::string::npos);
  EXPECT_EQ(Target::ReferenceCpu().ToString().find("kernels="), std::string::npos);
  EXPECT_FALSE(ParseTarget("class=cpu kernels=x:matmul:f32->f32:0").ok());
}

}  // namespace
}  // namespace uopc
