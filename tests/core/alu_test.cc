#include "core/alu.h"

#include <cmath>

#include <gtest/gtest.h>

namespace uopc {
namespace {

int64_t I(Ops op, DType t, int64_t a, int64_t b) {
  std::optional<Arg> r = EvalAlu(op, t, t, {Arg(a), Arg(b)});
  EXPECT_TRUE(r.has_value());
  return r ? r->Get<int64_t>() : 0;
}

double F(Ops op, DType t, double a, double b = 0) {
  return EvalAlu(op, t, t, {Arg(a), Arg(b)})->Get<double>();
}

TEST(Alu, FloorDivisionAndModuloFollowTheDivisorsSign) {
  EXPECT_EQ(I(Ops::FLOORDIV, DType::kI32, -7, 2), -4);
  EXPECT_EQ(I(Ops::MOD, DType::kI32, -7, 2), 1);
  EXPECT_EQ(I(Ops::FLOORDIV, DType::kI32, 7, -2), -4);
  EXPECT_EQ(I(Ops::MOD, DType::kI32, 7, -2), -1);
  EXPECT_EQ(I(Ops::FLOORDIV, DType::kI32, -8, 2), -4);
  EXPECT_EQ(I(Ops::MOD, DType::kI32, -8, 2), 0);
  EXPECT_EQ(I(Ops::FLOORDIV, DType::kI32, -2147483648LL, -1), -2147483648LL);  // wraps
}

TEST(Alu, DivisionByZeroIsUndefined) {
  EXPECT_EQ(EvalAlu(Ops::FLOORDIV, DType::kI32, DType::kI32, {Arg(int64_t{1}), Arg(int64_t{0})}),
            std::nullopt);
  EXPECT_EQ(EvalAlu(Ops::MOD, DType::kU8, DType::kU8, {Arg(int64_t{1}), Arg(int64_t{0})}),
            std::nullopt);
  EXPECT_TRUE(std::isinf(F(Ops::FDIV, DType::kF32, 1.0, 0.0)));
}

TEST(Alu, IntegersWrap) {
  EXPECT_EQ(I(Ops::ADD, DType::kI32, 2147483647, 1), -2147483648LL);
  EXPECT_EQ(I(Ops::MUL, DType::kI32, 65536, 65536), 0);
  EXPECT_EQ(I(Ops::ADD, DType::kU8, 255, 1), 0);
  EXPECT_EQ(I(Ops::ADD, DType::kI8, 127, 1), -128);
  EXPECT_EQ(I(Ops::ADD, DType::kU64, -1, 1), 0);  // u64 max + 1
}

TEST(Alu, UnsignedCompareAndDivide) {
  // u32 values are non-negative: 0xffffffff is large, not -1.
  EXPECT_EQ(
      EvalAlu(Ops::CMPLT, DType::kU32, DType::kBool, {Arg(int64_t{1}), Arg(int64_t{4294967295})})
          ->Get<bool>(),
      true);
  EXPECT_EQ(I(Ops::FLOORDIV, DType::kU64, -2, 2), 9223372036854775807LL);  // (2^64-2)/2
  EXPECT_EQ(EvalAlu(Ops::CMPLT, DType::kU64, DType::kBool, {Arg(int64_t{1}), Arg(int64_t{-1})})
                ->Get<bool>(),
            true);
}

TEST(Alu, ShiftsOutsideTheWidthGiveZeroOrSign) {
  EXPECT_EQ(I(Ops::SHL, DType::kI32, 1, 31), -2147483648LL);
  EXPECT_EQ(I(Ops::SHL, DType::kI32, 1, 32), 0);
  EXPECT_EQ(I(Ops::SHL, DType::kI32, 1, -1), 0);
  EXPECT_EQ(I(Ops::SHR, DType::kI32, -8, 1), -4);  // arithmetic for signed
  EXPECT_EQ(I(Ops::SHR, DType::kI32, -8, 40), -1);
  EXPECT_EQ(I(Ops::SHR, DType::kU32, 4294967295LL, 31), 1);  // logical for unsigned
}

TEST(Alu, FloatMaxPropagatesNaN) {
  EXPECT_TRUE(std::isnan(F(Ops::MAX, DType::kF32, NAN, 1.0)));
  EXPECT_TRUE(std::isnan(F(Ops::MAX, DType::kF32, 1.0, NAN)));
  EXPECT_EQ(F(Ops::MAX, DType::kF32, -1.0, 2.0), 2.0);
}

TEST(Alu, FloatResultsRoundToTheirDType) {
  EXPECT_EQ(F(Ops::ADD, DType::kF32, 1.0, 1e-10), 1.0);
  EXPECT_EQ(F(Ops::ADD, DType::kF16, 2048.0, 1.0), 2048.0);  // 2049 is not an f16: ties to even
  EXPECT_EQ(F(Ops::ADD, DType::kBF16, 256.0, 1.0), 256.0);
  EXPECT_EQ(F(Ops::ADD, DType::kF64, 1.0, 1e-10), 1.0 + 1e-10);
}

TEST(Alu, Casts) {
  EXPECT_EQ(CastValue(Arg(3.9), DType::kF32, DType::kI32).Get<int64_t>(), 3);
  EXPECT_EQ(CastValue(Arg(-3.9), DType::kF32, DType::kI32).Get<int64_t>(), -3);
  EXPECT_EQ(CastValue(Arg(1e20), DType::kF32, DType::kI32).Get<int64_t>(),
            2147483647);  // saturates
  EXPECT_EQ(CastValue(Arg(NAN), DType::kF32, DType::kI32).Get<int64_t>(), 0);
  EXPECT_EQ(CastValue(Arg(int64_t{-1}), DType::kI32, DType::kU8).Get<int64_t>(), 255);
  EXPECT_EQ(CastValue(Arg(int64_t{300}), DType::kI32, DType::kI8).Get<int64_t>(), 44);
  EXPECT_EQ(CastValue(Arg(int64_t{-1}), DType::kU64, DType::kF64).Get<double>(),
            18446744073709551615.0);
  EXPECT_EQ(CastValue(Arg(int64_t{2}), DType::kI32, DType::kBool).Get<bool>(), true);
  EXPECT_EQ(CastValue(Arg(0.1), DType::kF64, DType::kF32).Get<double>(), static_cast<double>(0.1f));
  EXPECT_EQ(CastValue(Arg(true), DType::kBool, DType::kF32).Get<double>(), 1.0);
}

TEST(Alu, Bitcasts) {
  EXPECT_EQ(BitcastValue(Arg(1.0), DType::kF32, DType::kI32).Get<int64_t>(), 0x3f800000);
  EXPECT_EQ(BitcastValue(Arg(int64_t{0x3c00}), DType::kI16, DType::kF16).Get<double>(), 1.0);
  EXPECT_EQ(BitcastValue(Arg(-0.0), DType::kF32, DType::kU32).Get<int64_t>(), 0x80000000LL);
  EXPECT_EQ(BitcastValue(Arg(int64_t{0x3f80}), DType::kU16, DType::kBF16).Get<double>(), 1.0);
  EXPECT_EQ(EvalAlu(Ops::BITCAST, DType::kF32, DType::kI64, {Arg(1.0)}), std::nullopt);
}

TEST(Alu, Where) {
  EXPECT_EQ(
      EvalAlu(Ops::WHERE, DType::kI32, DType::kI32, {Arg(true), Arg(int64_t{1}), Arg(int64_t{2})})
          ->Get<int64_t>(),
      1);
  EXPECT_EQ(
      EvalAlu(Ops::WHERE, DType::kI32, DType::kI32, {Arg(false), Arg(int64_t{1}), Arg(int64_t{2})})
          ->Get<int64_t>(),
      2);
}

}  // namespace
}  // namespace uopc
