// The matmul kernels the C plugin supplies (backends/c/matmul_kernels.h), called by the
// lowering in place of generated code (passes/supplied_kernels.h): a Tensor matmul whose
// dtypes a supplied kernel takes runs as a MATMUL call, in every layout the lowering gives
// it (transposed operands, batches, sizes that are no multiple of a tile, a symbolic
// length), and gives the reference result (f32 sums) within f32 rounding of the sum. On a
// CPU without AMX-BF16 the AMX cases skip, saying so; the OpenBLAS case runs in
// matmul_kernels_openblas_test (UOPC_C_BLAS=openblas).
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/float16.h"
#include "devices/registry.h"
#include "frontend/autocast.h"
#include "frontend/dlpack.h"
#include "frontend/nn.h"
#include "frontend/realize.h"
#include "frontend/sym_int.h"
#include "frontend/tensor.h"

namespace uopc {
namespace {

bool Supplies(const std::string& name) {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice("CPU:0");
  if (!d.ok()) return false;
  for (const SuppliedKernel& k : (*d)->target().kernels)
    if (k.name == name) return true;
  return false;
}

// How many MATMUL calls the plans of `run` made.
template <typename F>
int Calls(F&& run) {
  std::vector<Runtime::PlanRun> runs;
  Runtime::Get().Record(&runs);
  run();
  Runtime::Get().Record(nullptr);
  int calls = 0;
  for (const Runtime::PlanRun& r : runs)
    for (const Plan::Kernel* k : r.plan->kernels()) calls += k->ast.is(Ops::MATMUL);
  return calls;
}

// Values exact in bf16 (so the operands are the same in every dtype).
std::vector<float> Data(int64_t count, int seed) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] = BF16ToF32(F32ToBF16(std::sin(0.37f * i + seed) * 2.0f));
  return v;
}

// x (.., m, k) @ y (.., k, n) in double, batched over the leading dim (or none).
std::vector<double> Reference(const std::vector<float>& x, const std::vector<float>& y,
                              int64_t batch, int64_t m, int64_t k, int64_t n) {
  std::vector<double> out(batch * m * n);
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += double(x[z * m * k + i * k + q]) * y[z * k * n + q * n + j];
        out[z * m * n + i * n + j] = s;
      }
  return out;
}

// Within f32 rounding of a sum of k products of magnitude <= 4 (and a bf16 rounding of the
// result, for a bf16 out).
void ExpectClose(const std::vector<float>& got, const std::vector<double>& want, int64_t k,
                 bool bf16_out) {
  ASSERT_EQ(got.size(), want.size());
  const double tol = 4.0 * k * 1.2e-7 * 4;
  for (size_t i = 0; i < got.size(); ++i) {
    const double t = bf16_out ? tol + std::abs(want[i]) / 256.0 : tol;
    ASSERT_NEAR(got[i], want[i], t) << "element " << i;
  }
}

// `got` (a supplied kernel's) has the bits of `generated` (the generated kernel's), element
// for element.
void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& generated) {
  ASSERT_EQ(got.size(), generated.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(generated[i]))
        << "element " << i << ": " << got[i] << " against " << generated[i];
}

struct Case {
  int64_t batch, m, k, n;
  bool transpose_b;
  bool transpose_a = false;
};

class AmxMatmul : public ::testing::TestWithParam<Case> {};

TEST_P(AmxMatmul, RunsAsASuppliedKernelWithTheReferenceResult) {
  if (!Supplies("amx_bf16_to_f32")) GTEST_SKIP() << "this CPU (or UOPC_C_AMX=0) has no AMX-BF16";
  const auto [batch, m, k, n, transpose_b, transpose_a] = GetParam();
  const std::vector<float> xv = Data(batch * m * k, 1), yv = Data(batch * k * n, 2);
  Tensor x = Tensor::FromVector(xv, {batch, m, k}).Cast(DType::kBF16);
  x = transpose_a ? x.Transpose().Realize().Transpose() : x.Realize();
  Tensor y = Tensor::FromVector(yv, {batch, k, n}).Cast(DType::kBF16);
  if (transpose_b)  // stored as (n, k): read across its rows
    y = y.Transpose().Realize().Transpose();
  else
    y = y.Realize();
  std::vector<float> f32, bf16;
  const int calls = Calls([&] {
    f32 = x.Float().Matmul(y.Float()).ToVector<float>();
    bf16 = x.Matmul(y).Realize().Float().ToVector<float>();  // (a cast after it: not plain)
  });
  EXPECT_EQ(calls, 2);
  const std::vector<double> want = Reference(xv, yv, batch, m, k, n);
  ExpectClose(f32, want, k, false);
  ExpectClose(bf16, want, k, true);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AmxMatmul,
                         ::testing::Values(Case{1, 64, 64, 64, false}, Case{1, 70, 130, 50, false},
                                           Case{1, 96, 40, 160, true}, Case{3, 33, 64, 65, false},
                                           Case{2, 128, 256, 64, true}, Case{1, 96, 97, 96, false},
                                           Case{1, 96, 97, 96, true},
                                           // k in several L1-sized steps, the last one short
                                           Case{1, 70, 1100, 50, false}, Case{2, 33, 777, 40, true},
                                           Case{1, 40, 600, 48, false, true}));

TEST(AmxMatmulTest, SmallMatmulsStayGenerated) {
  if (!Supplies("amx_bf16_to_f32")) GTEST_SKIP() << "this CPU (or UOPC_C_AMX=0) has no AMX-BF16";
  Tensor x = Tensor::Ones({8, 16}, DType::kBF16), y = Tensor::Ones({16, 8}, DType::kBF16);
  std::vector<float> out;
  EXPECT_EQ(Calls([&] { out = x.Matmul(y).Float().ToVector<float>(); }), 0);
  EXPECT_EQ(out, std::vector<float>(64, 16.0f));
}

TEST(AmxMatmulTest, ASymbolicLengthCallsOnePlanForEveryValue) {
  if (!Supplies("amx_bf16_to_f32")) GTEST_SKIP() << "this CPU (or UOPC_C_AMX=0) has no AMX-BF16";
  const int64_t k = 96, n = 128;
  const std::vector<float> yv = Data(k * n, 5);
  Tensor y = Tensor::FromVector(yv, {k, n}).Cast(DType::kBF16).Realize();
  for (int64_t len : {200, 77}) {
    const SymInt t = SymInt::Variable("t", 1, 256, len);
    const std::vector<float> xv = Data(len * k, 6);
    std::vector<float> xs = xv;
    xs.resize(256 * k, 0.0f);
    Tensor x = Tensor::FromVector(xs, {256, k}).Cast(DType::kBF16).Realize();
    std::vector<float> out;
    EXPECT_EQ(Calls([&] {
                Tensor view = x.Shrink({{SymInt(0), t}, {SymInt(0), SymInt(k)}});
                out = view.Float().Matmul(y.Float()).ToVector<float>();
              }),
              1)
        << "t = " << len;
    ExpectClose(out, Reference(xv, yv, 1, len, k, n), k, false);
  }
}

// A NaN or an infinity in a row of a gives that row of out NaN or infinity (in bf16 too),
// and leaves the other rows as they were.
void ExpectNaNsAndInfinitiesReachOut(DType dtype) {
  std::vector<float> xv = Data(64 * 64, 7);
  const std::vector<float> yv(64 * 64, 1.0f);
  xv[5] = NAN;            // row 0
  xv[64 * 3] = INFINITY;  // row 3: every product +inf
  Tensor x = Tensor::FromVector(xv, {64, 64}).Cast(dtype).Realize();
  Tensor y = Tensor::FromVector(yv, {64, 64}).Cast(dtype).Realize();
  std::vector<float> out;
  EXPECT_EQ(Calls([&] { out = x.Matmul(y).Realize().Float().ToVector<float>(); }), 1);
  for (int j = 0; j < 64; ++j) {
    EXPECT_TRUE(std::isnan(out[j])) << j;
    EXPECT_EQ(out[3 * 64 + j], INFINITY) << j;
    EXPECT_TRUE(std::isfinite(out[64 + j])) << j;
  }
}

TEST(AmxMatmulTest, NaNsAndInfinitiesReachOut) {
  if (!Supplies("amx_bf16_to_f32")) GTEST_SKIP() << "this CPU (or UOPC_C_AMX=0) has no AMX-BF16";
  ExpectNaNsAndInfinitiesReachOut(DType::kBF16);
}

// Autocast's linear layer, forward and backward: x @ W (the f32 weight rounded to bf16 once),
// dY @ W^T and x^T @ dY are each a bf16 matmul the kernel takes.
TEST(AmxMatmulTest, AnAutocastLinearLayerCallsItForwardAndBackward) {
  if (!Supplies("amx_bf16_to_f32")) GTEST_SKIP() << "this CPU (or UOPC_C_AMX=0) has no AMX-BF16";
  Tensor::ManualSeed(1);
  Linear layer(128, 256);
  Tensor x = Tensor::Randn({8, 64, 128});  // (batch, tokens, features)
  int calls = Calls([&] {
    Autocast bf16(DType::kBF16);
    Tensor loss = layer.Forward(x).Float().Square().Mean();
    loss.Backward();
    layer.weight.grad().Realize();
  });
  EXPECT_GE(calls, 2);
}

// Autocast's x @ W^T with an f32 weight (a language model's head, W as (vocab, dim)): the
// weight is rounded to bf16 once, into a copy in its own order, which the kernel reads
// transposed. Before, the transposed rounding kept the matmul generated (7 ms of the bench
// GPT's bf16 step for its 65-token head, 20x the f32 step's kernel).
TEST(AmxMatmulTest, AnAutocastTransposedF32WeightCallsIt) {
  if (!Supplies("amx_bf16_to_f32")) GTEST_SKIP() << "this CPU (or UOPC_C_AMX=0) has no AMX-BF16";
  const int64_t m = 1024, k = 128, n = 65;
  const std::vector<float> xv = Data(m * k, 5), wv = Data(n * k, 6);
  std::vector<float> wt(k * n);  // W^T, (k, n)
  for (int64_t j = 0; j < n; ++j)
    for (int64_t q = 0; q < k; ++q) wt[q * n + j] = wv[j * k + q];
  Tensor x = Tensor::FromVector(xv, {16, m / 16, k}).Cast(DType::kBF16).Realize();
  Tensor w = Tensor::FromVector(wv, {n, k}).Realize();
  std::vector<float> out;
  const int calls = Calls([&] {
    Autocast bf16(DType::kBF16);
    out = x.Matmul(w.Transpose()).Realize().Float().ToVector<float>();
  });
  EXPECT_EQ(calls, 1);
  ExpectClose(out, Reference(xv, wt, 1, m, k, n), k, true);
}

// An attention's output projection reads its heads, (B, H, T, D), as (B, T, H * D): a view
// no BLAS layout has (H and D do not lie one after the other), indexed by division and
// remainder. Read from a copy in that order instead, x @ W and the weight's gradient are
// each a bf16 matmul the kernel takes (the bench GPT's two took 0.57 ms each as generated
// code, in each of its 4 layers).
TEST(AmxMatmulTest, AttentionHeadsFlattenedIntoAProjectionCallIt) {
  if (!Supplies("amx_bf16_to_f32")) GTEST_SKIP() << "this CPU (or UOPC_C_AMX=0) has no AMX-BF16";
  const int64_t b = 4, h = 4, t = 64, d = 32, c = h * d;
  const std::vector<float> hv = Data(b * h * t * d, 7), wv = Data(c * c, 8);
  Tensor heads = Tensor::FromVector(hv, {b, h, t, d}).Cast(DType::kBF16).Realize();
  Tensor w = Tensor::FromVector(wv, {c, c}).Cast(DType::kBF16).Realize();
  std::vector<float> out;
  EXPECT_EQ(Calls([&] {
              out = heads.Transpose(1, 2).Reshape({b, t, c}).Matmul(w).Float().ToVector<float>();
            }),
            1);
  std::vector<float> flat(b * t * c);  // the heads as (b * t, c)
  for (int64_t z = 0; z < b; ++z)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t q = 0; q < h; ++q)
        for (int64_t e = 0; e < d; ++e)
          flat[(z * t + i) * c + q * d + e] = hv[((z * h + q) * t + i) * d + e];
  ExpectClose(out, Reference(flat, wv, 1, b * t, c, c), c, true);
  // autocast's linear layer on them, forward and its weight's gradient, as in the GPT
  Tensor::ManualSeed(1);
  Linear proj(c, c);
  EXPECT_EQ(Calls([&] {
              Autocast bf16(DType::kBF16);
              Tensor loss =
                  proj.Forward(heads.Transpose(1, 2).Reshape({b, t, c})).Float().Square().Mean();
              loss.Backward();
              proj.weight.grad().Realize();
            }),
            2);
}

// On a CPU with AVX2 and FMA but no AVX-512 (or with UOPC_C_SGEMM=avx2, as
// matmul_kernels_avx2_test sets), f32 matmuls call avx2_sgemm: in every layout, sizes that
// are no multiple of its 6 x 16 tile, k in several L1-sized blocks, batches, and with the
// bits of the generated kernel (the same sums of fmas in order of k), with a read where it
// lies or packed.
class Avx2Sgemm : public ::testing::TestWithParam<Case> {};

TEST_P(Avx2Sgemm, RunsAsASuppliedKernelWithTheGeneratedKernelsBits) {
  if (!Supplies("avx2_sgemm")) GTEST_SKIP() << "this CPU has no AVX2 and FMA, or UOPC_C_SGEMM=none";
  const auto [batch, m, k, n, transpose_b, transpose_a] = GetParam();
  const std::vector<float> xv = Data(batch * m * k, 3), yv = Data(batch * k * n, 4);
  Tensor x = Tensor::FromVector(xv, {batch, m, k});
  x = transpose_a ? x.Transpose().Realize().Transpose() : x.Realize();
  Tensor y = Tensor::FromVector(yv, {batch, k, n});
  y = transpose_b ? y.Transpose().Realize().Transpose() : y.Realize();
  std::vector<float> got, generated;
  EXPECT_EQ(Calls([&] { got = x.Matmul(y).ToVector<float>(); }), 1);
  // the same product with an epilogue no supplied kernel takes: generated code
  EXPECT_EQ(Calls([&] { generated = (x.Matmul(y) * 1.0f).ToVector<float>(); }), 0);
  ExpectClose(got, Reference(xv, yv, batch, m, k, n), k, false);
  ExpectSameBits(got, generated);
}

// bf16 operands (the kernels where there is no AMX): out in f32, and in bf16 (each sum rounded
// once), with the generated bf16 matmul's bits.
TEST_P(Avx2Sgemm, Bf16OperandsGiveTheGeneratedKernelsBits) {
  if (!Supplies("avx2_bf16_to_f32")) GTEST_SKIP() << "avx2_sgemm is off, or AMX takes bf16";
  const auto [batch, m, k, n, transpose_b, transpose_a] = GetParam();
  const std::vector<float> xv = Data(batch * m * k, 5), yv = Data(batch * k * n, 6);
  Tensor x = Tensor::FromVector(xv, {batch, m, k}).Cast(DType::kBF16);
  x = transpose_a ? x.Transpose().Realize().Transpose() : x.Realize();
  Tensor y = Tensor::FromVector(yv, {batch, k, n}).Cast(DType::kBF16);
  y = transpose_b ? y.Transpose().Realize().Transpose() : y.Realize();
  std::vector<float> f32, bf16, f32_generated, bf16_generated;
  EXPECT_EQ(Calls([&] {
              f32 = x.Float().Matmul(y.Float()).ToVector<float>();
              bf16 =
                  x.Matmul(y).Realize().Float().ToVector<float>();  // (a cast after it: not plain)
            }),
            2);
  EXPECT_EQ(Calls([&] {
              f32_generated = (x.Float().Matmul(y.Float()) * 1.0f).ToVector<float>();
              bf16_generated = (x.Matmul(y) * 1.0f).Realize().Float().ToVector<float>();
            }),
            0);
  const std::vector<double> want = Reference(xv, yv, batch, m, k, n);
  ExpectClose(f32, want, k, false);
  ExpectClose(bf16, want, k, true);
  ExpectSameBits(f32, f32_generated);
  ExpectSameBits(bf16, bf16_generated);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Avx2Sgemm,
                         ::testing::Values(Case{1, 64, 64, 64, false}, Case{1, 70, 130, 50, false},
                                           Case{1, 96, 40, 160, true}, Case{3, 33, 64, 65, false},
                                           Case{2, 128, 256, 64, true}, Case{1, 97, 300, 17, false},
                                           Case{1, 5, 2000, 30, false},
                                           // k in several L1-sized blocks, the last one short
                                           Case{1, 70, 1100, 50, false}, Case{2, 33, 777, 40, true},
                                           Case{1, 40, 600, 48, false, true},
                                           Case{1, 300, 200, 300, true, true},
                                           // a read where it lies (few panels of b), packed
                                           // where a transposed a's steps span many pages
                                           Case{1, 1100, 300, 40, false, true},
                                           Case{1, 200, 300, 70, false}));

TEST(Avx2SgemmTest, NaNsAndInfinitiesReachOut) {
  if (!Supplies("avx2_sgemm")) GTEST_SKIP() << "this CPU has no AVX2 and FMA, or UOPC_C_SGEMM=none";
  ExpectNaNsAndInfinitiesReachOut(DType::kF32);
  if (!Supplies("avx2_bf16_to_f32")) GTEST_SKIP() << "avx2_sgemm is off, or AMX takes bf16";
  ExpectNaNsAndInfinitiesReachOut(DType::kBF16);  // (rounded 8 sums a step)
}

// An attention's scores, q . k^T, where q and k are a linear layer's output plus its bias
// (split into heads by views): the biased output is staged, so that the scores are a
// matmul the kernel takes rather than generated code adding the bias inside its loops (a
// dim-512 model's ran at 25 GFLOP/s). The same sums: the generated scores' bits.
TEST(Avx2SgemmTest, AttentionScoresOfABiasedProjectionCallIt) {
  if (!Supplies("avx2_sgemm")) GTEST_SKIP() << "this CPU has no AVX2 and FMA, or UOPC_C_SGEMM=none";
  const int64_t b = 2, t = 64, h = 4, d = 32, c = h * d;
  Tensor::ManualSeed(2);
  Linear qkv(c, 3 * c);
  Tensor x = Tensor::Randn({b, t, c}).Realize();
  auto head = [&](const Tensor& y, int64_t part) {  // (b, h, t, d)
    return y.Shrink({{0, b}, {0, t}, {part * c, (part + 1) * c}})
        .Reshape({b, t, h, d})
        .Transpose(1, 2);
  };
  std::vector<float> got, generated;
  EXPECT_EQ(Calls([&] {
              const Tensor y = qkv.Forward(x);
              got = head(y, 0).Matmul(head(y, 1).Transpose(2, 3)).ToVector<float>();
            }),
            2);
  EXPECT_EQ(Calls([&] {  // (an epilogue: the scores generated, the projection still a call)
              const Tensor y = qkv.Forward(x);
              generated = (head(y, 0).Matmul(head(y, 1).Transpose(2, 3)) * 1.0f).ToVector<float>();
            }),
            1);
  ASSERT_EQ(got.size(), static_cast<size_t>(b * h * t * t));
  ExpectSameBits(got, generated);
}

// A weight that several calls multiply unchanged is kept packed (backends/c/packed_b_cache.h),
// and packed again after every way a program writes it: assigned host values, a computed
// value, a matmul's result, and the host through its DLPack address. After each, three calls
// (the third reads the kept copy) give the generated matmul's bits for the new weight.
// (cpu_devices_test writes it through each of the plugin's calls.)
TEST(Avx2SgemmTest, AWeightKeptPackedIsPackedAgainAfterEveryWrite) {
  if (!Supplies("avx2_sgemm")) GTEST_SKIP() << "this CPU has no AVX2 and FMA, or UOPC_C_SGEMM=none";
  const int64_t m = 64, k = 300, n = 70;  // (k in two blocks, a last panel short of 16)
  const Tensor x = Tensor::FromVector(Data(m * k, 7), {m, k}).Realize();
  Tensor w = Tensor::FromVector(Data(k * n, 8), {k, n}).Realize();
  auto expect_multiplied = [&](const char* after) {
    SCOPED_TRACE(after);
    const std::vector<float> generated = (x.Matmul(w) * 1.0f).ToVector<float>();
    for (int call = 0; call < 3; ++call) {
      std::vector<float> got;
      ASSERT_EQ(Calls([&] { got = x.Matmul(w).ToVector<float>(); }), 1);
      ExpectSameBits(got, generated);
    }
  };
  expect_multiplied("first");
  w.Assign(Tensor::FromVector(Data(k * n, 9), {k, n}));
  w.Realize();
  expect_multiplied("a copy from the host");
  w.Assign(w * -0.5f);
  w.Realize();
  expect_multiplied("a generated kernel");
  const Tensor u = Tensor::FromVector(Data(k * m, 10), {k, m}).Realize();
  ASSERT_EQ(Calls([&] {
              w.Assign(u.Matmul(x.Shrink({{0, m}, {0, n}})));
              w.Realize();
            }),
            1);
  expect_multiplied("a supplied matmul");
  DLManagedTensor* shared = ToDLPack(w);
  float* data = static_cast<float*>(shared->dl_tensor.data);
  for (int64_t i = 0; i < k * n; ++i) data[i] = std::cos(0.1f * i);
  expect_multiplied("the host, through DLPack");
  for (int64_t i = 0; i < k * n; ++i) data[i] = std::sin(0.3f * i);
  expect_multiplied("the host again");
  shared->deleter(shared);
}

// x @ W^T with a symbolic row count (a batched decode step's logits over a tied embedding):
// the call reads W where it lies, as with a static count. layout_copies multiplied the sizes
// of such a sum to decide whether a supplied kernel takes it, with a symbolic size as 2^61:
// the product overflowed, and every run copied W transposed first (25 ms of a 57 ms step of
// a 50,257-token vocabulary).
TEST(Avx2SgemmTest, ASymbolicRowCountReadsATransposedWeightWhereItLies) {
  if (!Supplies("avx2_sgemm")) GTEST_SKIP() << "this CPU has no AVX2 and FMA, or UOPC_C_SGEMM=none";
  const int64_t k = 96, n = 300;
  const Tensor w = Tensor::FromVector(Data(n * k, 11), {n, k}).Realize();
  const Tensor x = Tensor::FromVector(Data(32 * k, 12), {32, k}).Realize();
  for (int64_t rows : {32, 17}) {
    const SymInt s = SymInt::Variable("rows", 1, 32, rows);
    std::vector<Runtime::PlanRun> runs;
    Runtime::Get().Record(&runs);
    const std::vector<float> got = x.Slice(0, 0, s).Matmul(w.Transpose()).ToVector<float>();
    Runtime::Get().Record(nullptr);
    int kernels = 0, calls = 0;
    for (const Runtime::PlanRun& r : runs)
      for (const Plan::Kernel* kernel : r.plan->kernels()) {
        ++kernels;
        calls += kernel->ast.is(Ops::MATMUL);
      }
    EXPECT_EQ(calls, 1) << rows;
    EXPECT_EQ(kernels, 1) << rows << " rows: a copy of W beside the call";
    const std::vector<float> generated =
        (x.Slice(0, 0, rows).Matmul(w.Transpose()) * 1.0f).ToVector<float>();
    ExpectSameBits(got, generated);
  }
}

// With UOPC_C_BLAS=openblas (matmul_kernels_openblas_test), f32 matmuls call OpenBLAS.
TEST(OpenBlasMatmulTest, F32MatmulsCallSgemmInEveryLayout) {
  if (!Supplies("openblas_sgemm")) GTEST_SKIP() << "UOPC_C_BLAS is not openblas";
  for (const Case& c :
       {Case{1, 64, 64, 64, false}, Case{1, 70, 130, 50, true}, Case{3, 33, 64, 65, false}}) {
    const std::vector<float> xv = Data(c.batch * c.m * c.k, 3), yv = Data(c.batch * c.k * c.n, 4);
    Tensor x = Tensor::FromVector(xv, {c.batch, c.m, c.k}).Realize();
    Tensor y = Tensor::FromVector(yv, {c.batch, c.k, c.n});
    y = c.transpose_b ? y.Transpose().Realize().Transpose() : y.Realize();
    std::vector<float> out;
    EXPECT_EQ(Calls([&] { out = x.Matmul(y).ToVector<float>(); }), 1) << c.m << "x" << c.k;
    ExpectClose(out, Reference(xv, yv, c.batch, c.m, c.k, c.n), c.k, false);
  }
}

}  // namespace
}  // namespace uopc
