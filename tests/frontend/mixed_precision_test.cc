// Mixed precision as the seed's 15.4 measures it: 64 x 64 inputs rounded to f16, multiplied
// with f32 accumulation (the f16 values cast up before the sum) against f64 on the same
// inputs, the rounding of the inputs themselves, and an all-f16 product (the seed printed
// 8.2e-6, 9.5e-3 and 6.9e-2 from numpy's generator: the same order of magnitudes here, from
// uopc's). The kernel loads f16 and sums in an f32 accumulator.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/c/c_kernel.h"
#include "core/float16.h"
#include "frontend/autocast.h"
#include "frontend/error.h"
#include "frontend/realize.h"
#include "frontend/tensor.h"

namespace uopc {
namespace {

constexpr int64_t N = 64;

std::vector<double> MatmulF64(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<double> c(N * N, 0.0);
  for (int i = 0; i < N; ++i)
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < N; ++j) c[i * N + j] += double{a[i * N + k]} * b[k * N + j];
  return c;
}

double MaxError(const Tensor& t, const std::vector<double>& ref) {
  std::vector<float> v = t.Float().ToVector<float>();
  double e = 0;
  for (size_t i = 0; i < v.size(); ++i) e = std::max(e, std::abs(v[i] - ref[i]));
  return e;
}

// The C source of the kernel that computes `t`.
std::string SourceOf(const Tensor& t) {
  absl::StatusOr<std::shared_ptr<const Plan>> p = Runtime::Get().PlanFor({t.data()});
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok() || (*p)->kernels().empty()) return "";
  absl::StatusOr<std::string> src = RenderCKernel((*p)->kernels().back()->ast, "k", nullptr);
  EXPECT_TRUE(src.ok()) << src.status();
  return src.ok() ? *src : "";
}

// How many roundings to bf16 a kernel's C source makes (calls of the prelude's uopc_rbf16,
// and of uopc_f32_to_bf16, which rounds what a store converts).
int Roundings(const std::string& src) {
  int n = 0;
  for (const char* call : {"uopc_rbf16(", "uopc_f32_to_bf16("})
    for (size_t at = src.find(call); at != std::string::npos; at = src.find(call, at + 1)) ++n;
  return n;
}

TEST(MixedPrecision, F16StorageWithF32AccumulationAsTheSeedMeasuresIt) {
  Tensor::ManualSeed(0);
  Tensor a = Tensor::Randn({N, N}).Realize(), b = Tensor::Randn({N, N}).Realize();
  Tensor a16 = a.Cast(DType::kF16).Realize(), b16 = b.Cast(DType::kF16).Realize();
  const std::vector<double> ref =
      MatmulF64(a16.Float().ToVector<float>(), b16.Float().ToVector<float>());
  Tensor mixed = a16.Float().Matmul(b16.Float());
  const double accumulate_f32 = MaxError(mixed, ref);      // the seed: 8.2e-6
  const double round_inputs = MaxError(a.Matmul(b), ref);  // 9.5e-3
  // every product and every partial sum rounded to f16, in the order of k: each stored as
  // f16 (a Sum of halves adds in f32, and a fused chain of half ops carries f32 to its end)
  auto product = [&](int64_t k) {
    return (a16.Slice(1, k, k + 1) * b16.Slice(0, k, k + 1)).Realize();
  };
  Tensor acc = product(0);
  for (int64_t k = 1; k < N; ++k) acc = (acc + product(k)).Realize();
  const double all_f16 = MaxError(acc, ref);  // 6.9e-2
  std::cout << "max |err| vs f64 on the same f16 inputs: " << accumulate_f32
            << "\nmax |err| of f16 rounding of the inputs: " << round_inputs
            << "\nall-f16 GEMM max |err|: " << all_f16 << "\n";
  EXPECT_EQ(acc.dtype(), DType::kF16);
  EXPECT_GT(accumulate_f32, 0);
  EXPECT_LT(accumulate_f32, 1e-4);
  EXPECT_GT(round_inputs, 1e-3);
  EXPECT_LT(round_inputs, 1e-1);
  EXPECT_GT(all_f16, 2 * round_inputs);       // accumulating in f16 costs more than storing
  EXPECT_GT(all_f16, 1000 * accumulate_f32);  // the seed's "almost ten thousand times"
  const std::string src = SourceOf(a16.Float().Matmul(b16.Float()));  // (not yet realized)
  EXPECT_NE(src.find("_Float16 val"), std::string::npos) << src;      // f16 loads
  EXPECT_NE(src.find("float acc"), std::string::npos) << src;         // an f32 accumulator
  EXPECT_EQ(src.find("_Float16 acc"), std::string::npos) << src;
  // a matmul of halves is that kernel: f16 loads, an f32 sum, one rounding at the end
  Tensor half_matmul = a16.Matmul(b16);
  EXPECT_EQ(half_matmul.dtype(), DType::kF16);
  const std::string half_src = SourceOf(half_matmul);
  EXPECT_NE(half_src.find("float acc"), std::string::npos) << half_src;
  EXPECT_LE(MaxError(half_matmul, ref), 1.6e-2);  // (the result's own f16 rounding: |c| < 32)
}

// A matmul of halves that another kernel reads is staged as the half it rounds to, not as
// its f32 sums: half the bytes.
// A fused chain of half ops computes in f32 and rounds once, where the kernel stores it
// (passes/half_in_f32.h), bit for bit: (x * y + z) * x of bf16 tensors is the f32 ops on
// their values, rounded to bf16 at the end; stored between ops, it rounds after each.
TEST(MixedPrecision, AFusedChainOfHalfOpsRoundsOnceAtItsEnd) {
  Tensor::ManualSeed(1);
  Tensor x = Tensor::Randn({1000}).Cast(DType::kBF16).Realize();
  Tensor y = (Tensor::Randn({1000}) * 3).Cast(DType::kBF16).Realize();
  Tensor z = (Tensor::Randn({1000}) * 0.01).Cast(DType::kBF16).Realize();
  const std::vector<float> xv = x.Float().ToVector<float>(), yv = y.Float().ToVector<float>(),
                           zv = z.Float().ToVector<float>();
  Tensor fused = (x * y + z) * x;
  const std::string src = SourceOf(fused);
  EXPECT_EQ(Roundings(src), 1) << src;
  Tensor staged = ((x * y).Realize() + z).Realize() * x;
  const std::vector<float> got = fused.Float().ToVector<float>(),
                           per_op = staged.Float().ToVector<float>();
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    volatile float p = xv[i] * yv[i], s = p + zv[i], r = s * xv[i];  // (each rounded to f32)
    EXPECT_EQ(F32ToBF16(got[i]), F32ToBF16(r)) << i;
    const float p16 = BF16ToF32(F32ToBF16(p)), s16 = BF16ToF32(F32ToBF16(p16 + zv[i]));
    EXPECT_EQ(F32ToBF16(per_op[i]), F32ToBF16(s16 * xv[i])) << i;
    differ += got[i] != per_op[i];
  }
  EXPECT_GT(differ, 0);  // (the roundings between ops do change results)
}

TEST(MixedPrecision, AMatmulOfHalvesIsStoredAsTheHalf) {
  Tensor a = Tensor::Randn({N, N}).Cast(DType::kBF16).Realize();
  Tensor y = a.Matmul(a).Matmul(a);
  absl::StatusOr<std::shared_ptr<const Plan>> p = Runtime::Get().PlanFor({y.data()});
  ASSERT_TRUE(p.ok()) << p.status();
  int f32 = 0, bf16 = 0;
  for (const Plan::BufferSpec& b : (*p)->buffers) {
    f32 += b.dtype == DType::kF32 && b.count == N * N;
    bf16 += b.dtype == DType::kBF16 && b.count == N * N;
  }
  EXPECT_EQ(f32, 0);
  EXPECT_GE(bf16, 3);  // a, a @ a, and the result
}

// A large bf16 matmul reads a's rows from an f32 copy, converted once (a kernel of its own)
// instead of at every step of every register tile; the values are the same: each output
// is its products summed in f32 in the order of k, rounded to bf16 once.
TEST(MixedPrecision, ALargeBf16MatmulReadsAnF32CopyOfItsRows) {
  constexpr int64_t m = 256, k = 512, n = 64;
  Tensor::ManualSeed(2);
  Tensor a = Tensor::Randn({m, k}).Cast(DType::kBF16).Realize();
  Tensor b = Tensor::Randn({k, n}).Cast(DType::kBF16).Realize();
  Tensor y = a.Matmul(b);
  absl::StatusOr<std::shared_ptr<const Plan>> p = Runtime::Get().PlanFor({y.data()});
  ASSERT_TRUE(p.ok()) << p.status();
  bool widened = false;  // (a's copy: m x k floats)
  for (const Plan::BufferSpec& buffer : (*p)->buffers)
    widened |= buffer.dtype == DType::kF32 && buffer.count == m * k;
  EXPECT_TRUE(widened);
  const std::vector<float> av = a.Float().ToVector<float>(), bv = b.Float().ToVector<float>();
  const std::vector<float> out = y.Float().ToVector<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = 0;
      for (int64_t x = 0; x < k; ++x) s = std::fma(av[i * k + x], bv[x * n + j], s);
      ASSERT_EQ(out[i * n + j], BF16ToF32(F32ToBF16(s))) << i << ", " << j;
    }
}

// Autocast's f32 weight, rounded to bf16 as a matmul reads it, is rounded once for all the
// row tiles (a copy of the rounded values, passes/layout_copies.h), read as it is by x @ W
// and through a transpose by the input's gradient dY @ W^T: neither matmul kernel rounds
// in its loops (one rounding, of its output; x, 64K elements, is rounded once into a copy
// too), and the values are W's rounded ones.
TEST(MixedPrecision, AnAutocastWeightIsRoundedOnceForAllRowTiles) {
  constexpr int64_t m = 512, k = 128, n = 64;
  Tensor::ManualSeed(3);
  Tensor x = Tensor::Randn({m, k}).Realize();
  Tensor w = Tensor::Randn({k, n}).RequiresGrad();
  Tensor dy = Tensor::Randn({m, n}).Cast(DType::kBF16).Realize();
  Tensor y, dx;
  {
    const Autocast bf16(DType::kBF16);
    y = x.Matmul(w);
    dx = dy.Matmul(w.Transpose());
  }
  for (const Tensor* t : {&y, &dx}) {
    const std::string src = SourceOf(*t);
    EXPECT_EQ(Roundings(src), 1) << src;
  }
  const std::vector<float> xv = x.ToVector<float>(), wv = w.ToVector<float>(),
                           dyv = dy.Float().ToVector<float>();
  const std::vector<float> yv = y.Float().ToVector<float>(), dxv = dx.Float().ToVector<float>();
  auto r = [](float v) { return BF16ToF32(F32ToBF16(v)); };
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float s = 0;
      for (int64_t q = 0; q < k; ++q) s = std::fma(r(xv[i * k + q]), r(wv[q * n + j]), s);
      ASSERT_EQ(yv[i * n + j], r(s)) << i << ", " << j;
    }
    for (int64_t q = 0; q < k; ++q) {
      float s = 0;
      for (int64_t j = 0; j < n; ++j) s = std::fma(dyv[i * n + j], r(wv[q * n + j]), s);
      ASSERT_EQ(dxv[i * k + q], r(s)) << i << ", " << q;
    }
  }
}

TEST(MixedPrecision, ReductionsOfHalvesSumInF32) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    // one at a time in bf16, 256 + 1 rounds back to 256: the sum would stop there
    EXPECT_EQ(Tensor::Ones({4096}, t).Sum().Item<float>(), 4096.0f) << DTypeName(t);
    EXPECT_EQ(Tensor::Ones({4096}, t).Sum().dtype(), t);
    EXPECT_EQ(Tensor::Ones({8, 512}, t).Mean({1}).ToVector<float>(), std::vector<float>(8, 1.0f));
  }
}

TEST(MixedPrecision, AutocastRoundsAMatmulsOperandsAndSumsInF32) {
  Tensor::ManualSeed(1);
  Tensor a = Tensor::Randn({N, N}).Realize(), b = Tensor::Randn({N, N}).Realize();
  Tensor y;
  {
    Autocast bf16(DType::kBF16);
    y = a.Matmul(b);
    EXPECT_EQ(y.dtype(), DType::kBF16);
    EXPECT_EQ((a + b).dtype(), DType::kF32);  // (elementwise ops keep their operands' dtype)
    {
      Autocast none(DType::kF32);
      EXPECT_EQ(a.Matmul(b).dtype(), DType::kF32);
    }
    EXPECT_EQ(a.Matmul(b).dtype(), DType::kBF16);
  }
  EXPECT_EQ(a.Matmul(b).dtype(), DType::kF32);  // (the scope ended)
  Tensor a16 = a.Cast(DType::kBF16), b16 = b.Cast(DType::kBF16);
  EXPECT_EQ(y.Float().ToVector<float>(), a16.Matmul(b16).Float().ToVector<float>());
  EXPECT_THROW(Autocast(DType::kI32), Error);
}

}  // namespace
}  // namespace uopc
