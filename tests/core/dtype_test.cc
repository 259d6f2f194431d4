#include "core/dtype.h"

#include <gtest/gtest.h>

namespace uopc {
namespace {

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    EXPECT_EQ(ParseDType(DTypeName(t)), t) << DTypeName(t);
  }
  EXPECT_EQ(ParseDType("float"), std::nullopt);
}

TEST(DType, Sizes) {
  EXPECT_EQ(DTypeSize(DType::kBool), 1);
  EXPECT_EQ(DTypeSize(DType::kF16), 2);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2);
  EXPECT_EQ(DTypeSize(DType::kU32), 4);
  EXPECT_EQ(DTypeSize(DType::kF64), 8);
}

TEST(DType, Limits) {
  EXPECT_EQ(DTypeMin(DType::kI8), -128);
  EXPECT_EQ(DTypeMax(DType::kU8), 255);
  EXPECT_EQ(DTypeMin(DType::kI32), -2147483648LL);
  EXPECT_EQ(DTypeMax(DType::kU32), 4294967295LL);
  EXPECT_EQ(DTypeMax(DType::kBool), 1);
}

TEST(DType, Promotion) {
  struct Case {
    DType a, b, want;
  };
  for (auto [a, b, want] : std::vector<Case>{
           {DType::kI32, DType::kI32, DType::kI32},
           {DType::kBool, DType::kI8, DType::kI8},
           {DType::kI8, DType::kU8, DType::kI16},
           {DType::kU8, DType::kU16, DType::kU16},
           {DType::kI32, DType::kU32, DType::kI64},
           {DType::kI64, DType::kU8, DType::kI64},
           {DType::kU64, DType::kI8, DType::kF64},
           {DType::kI64, DType::kF16, DType::kF16},
           {DType::kF16, DType::kBF16, DType::kF32},
           {DType::kF16, DType::kF32, DType::kF32},
           {DType::kBF16, DType::kF64, DType::kF64},
       }) {
    EXPECT_EQ(PromoteTypes(a, b), want) << DTypeName(a) << " with " << DTypeName(b);
    EXPECT_EQ(PromoteTypes(b, a), want) << "promotion must be symmetric";
  }
  EXPECT_EQ(PromoteTypes(DType::kVoid, DType::kI32), std::nullopt);
}

}  // namespace
}  // namespace uopc
