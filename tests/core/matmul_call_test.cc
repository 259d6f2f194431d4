// The matmul call (core/matmul_call.h): its reference result, the params a launch checks
// before a plugin's kernel reads a byte (each operand inside its buffer, BLAS layouts,
// out's rows apart), and its node's form.
#include "core/matmul_call.h"

#include <vector>

#include <gtest/gtest.h>

#include "core/float16.h"
#include "core/verify.h"

namespace uopc {
namespace {

// (2, 3) @ (3, 2), a and b row-major, out's rows 3 apart.
constexpr MatmulParams kSmall{1, 2, 2, 3, 0, 0, 3, 1, 0, 0, 2, 1, 0, 0, 3};

TEST(MatmulCall, TheReferenceSumsF32ProductsAndRoundsToOut) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1}, out(6, -1.0f);
  ASSERT_TRUE(RunMatmulReference(kSmall, {out.data(), DType::kF32, 6}, {a.data(), DType::kF32, 6},
                                 {b.data(), DType::kF32, 6})
                  .ok());
  EXPECT_EQ(out, (std::vector<float>{4, 5, -1, 10, 11, -1}));  // padding untouched
  std::vector<uint16_t> half(6, 0);
  b = {1.00390625f, 0, 0, 1, 0, 0};  // 1 + 2^-8: bf16 rounds 1.00390625 * 1 to even (1.0)
  ASSERT_TRUE(RunMatmulReference(kSmall, {half.data(), DType::kBF16, 6}, {a.data(), DType::kF32, 6},
                                 {b.data(), DType::kF32, 6})
                  .ok());
  EXPECT_EQ(BF16ToF32(half[0]), 1.0f);
  EXPECT_EQ(BF16ToF32(half[3]), 4.0f);  // 4.015625 rounds to 4
}

TEST(MatmulCall, ALaunchIsCheckedAgainstItsBuffers) {
  EXPECT_TRUE(CheckMatmul(kSmall, 6, 6, 6).ok());
  absl::Status s = CheckMatmul(kSmall, 6, 6, 5);  // b's last element is b[5]
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("b reaches elements [0, 5] of a buffer of 5"), std::string::npos) << s;
  MatmulParams p = kSmall;
  p.a_offset = -1;
  EXPECT_EQ(CheckMatmul(p, 6, 6, 6).code(), absl::StatusCode::kOutOfRange);
  p = kSmall;
  p.out_row = 1;  // rows of 2 elements, 1 apart
  EXPECT_EQ(CheckMatmul(p, 6, 6, 6).code(), absl::StatusCode::kInvalidArgument);
  p = kSmall;
  p.a_col = 2;  // neither of a's strides is 1
  EXPECT_EQ(CheckMatmul(p, 6, 12, 6).code(), absl::StatusCode::kInvalidArgument);
  p = kSmall;
  p.m = 1, p.a_row = 99;  // a length-1 axis takes any stride
  EXPECT_TRUE(CheckMatmul(p, 6, 6, 6).ok());
  p = kSmall;
  p.k = 0;  // nothing read: out is zeros
  EXPECT_TRUE(CheckMatmul(p, 6, 0, 0).ok());
}

TEST(MatmulCall, ParamsReadBackFromTheirValues) {
  std::array<int64_t, MatmulParams::kCount> v;
  for (int i = 0; i < MatmulParams::kCount; ++i) v[i] = 100 + i;
  EXPECT_EQ(MatmulParams::FromValues(v).Values(), v);
  const MatmulParams p = MatmulParams::FromValues(v);
  EXPECT_EQ(p.batch2, 115);
  EXPECT_EQ(p.out_batch2, 118);
  // matmul z of batch2 x batch: (z / batch) along batch2, (z % batch) along batch
  EXPECT_EQ(p.AOffset(100 * 2 + 3), p.a_offset + 2 * p.a_batch2 + 3 * p.a_batch);
}

TEST(MatmulCall, TheNodeCarriesItsParamsAsIndexExpressions) {
  std::vector<UOp> params;
  for (int64_t v : kSmall.Values()) params.push_back(UOp::Int(v));
  params[1] = UOp::Var("m", 1, 2);
  const UOp call = MatmulCall(UOp::Buffer(DType::kF32, 0, 6), UOp::Buffer(DType::kBF16, 1, 6),
                              UOp::Buffer(DType::kBF16, 2, 6), params);
  EXPECT_TRUE(Verify(call).ok()) << Verify(call);
  absl::StatusOr<MatmulParams> p = EvalMatmulParams(call, {{"m", 1}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->m, 1);
  EXPECT_EQ(p->Values()[2], 2);
  EXPECT_FALSE(EvalMatmulParams(call, {}).ok());  // m has no value
  EXPECT_FALSE(Verify(MatmulCall(UOp::Buffer(DType::kI32, 0, 6), UOp::Buffer(DType::kBF16, 1, 6),
                                 UOp::Buffer(DType::kBF16, 2, 6), params))
                   .ok());
}

}  // namespace
}  // namespace uopc
