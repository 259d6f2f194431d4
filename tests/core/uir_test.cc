#include "core/uir.h"

#include <cmath>

#include <gtest/gtest.h>

namespace uopc {
namespace {

// A graph with every kind of node, argument and literal the text form has.
UOp Everything() {
  UOp x = UOp::Buffer(DType::kF32, 0, 32), len = UOp::Buffer(DType::kI32, 1, 1);
  UOp out = UOp::Buffer(DType::kF32, 2, 4);
  UOp n = len.Index(0).Load();
  UOp i = UOp::Range(4, 0), j = UOp::Range(n, 1, RangeKind::kReduce);
  UOp acc = UOp::Alloc(DType::kF32, 0, 1).After({i});
  UOp init = acc.Index(0).Store(UOp::Const(DType::kF32, 0.0));
  UOp accj = acc.After({init, j});
  UOp upd = accj.Index(0).Store(accj.Index(0).Load() + x.Index(i * 8 + j).Load());
  UOp loop = out.Index(i).Store(acc.After({upd.End({j})}).Index(0).Load()).End({i});
  UOp t = UOp::Buffer(DType::kF16, 3, 24);
  UOp dims = UOp::Derived(Ops::RESHAPE, {t, UOp::Int(2), UOp::Int(3), UOp::Int(4)});
  UOp perm = UOp::Derived(Ops::PERMUTE, {dims}, Axes{{2, 0, 1}});
  UOp red = UOp::Derived(Ops::REDUCE, {perm}, ReduceArg{Ops::MAX, {0, 2}});
  UOp cp = UOp::Derived(Ops::COPY, {red}, DeviceArg{"CUDA:0"});
  UOp col = UOp::Derived(
      Ops::COLLECTIVE, {cp},
      CollectiveArg{CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, Ops::MAX, 3, 4});
  UOp v = UOp::Var("seq_len", 1, 2048);
  UOp misc = UOp::Sink({
      v.Lt(UOp::Int(-3)).Where(UOp::Const(DType::kF32, 0.1), UOp::Const(DType::kF32, -INFINITY)),
      UOp::ConstInt(DType::kI64, 5) * UOp::ConstInt(DType::kI64, -1),
      UOp::Const(DType::kF64, 0.1) + UOp::Const(DType::kF64, 1e300),
      UOp::Const(DType::kBF16, 1.5).Cast(DType::kF32) + UOp::Const(DType::kF32, NAN),
      UOp::ConstInt(DType::kU64, -1).Bitcast(DType::kI64),
      UOp::ConstBool(DType::kBool, false).Ne(UOp::ConstBool(DType::kBool, true)),
  });
  return UOp::Sink({loop, col, misc});
}

TEST(Uir, PrintThenParseIsIdentity) {
  UOp g = Everything();
  absl::StatusOr<UOp> back = ParseUir(ToUir(g));
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << ToUir(g);
  EXPECT_EQ(*back, g) << ToUir(g);
}

TEST(Uir, ParseThenPrintIsIdentity) {
  std::string text = ToUir(Everything());
  EXPECT_EQ(ToUir(*ParseUir(text)), text);
}

TEST(Uir, TheSeedsListing) {
  UOp i = UOp::Range(4, 0);
  UOp j = UOp::Range(UOp::Buffer(DType::kI32, 1, 1).Index(0).Load(), 1);
  EXPECT_EQ(ToUir(i + j.FloorDiv(8)),
            "%0 = range 4 : idx=0 kind=loop\n"
            "%1 = buffer 1 : dtype=i32 slot=1\n"
            "%2 = index %1, 0\n"
            "%3 = load %2\n"
            "%4 = range %3 : idx=1 kind=loop\n"
            "%5 = floordiv %4, 8\n"
            "%6 = add %0, %5\n");
}

TEST(Uir, LiteralsAndDeclaredDTypes) {
  EXPECT_EQ(ToUir(UOp::Const(DType::kF32, 0.1)), "%0 = const 0.1\n");
  EXPECT_EQ(ToUir(UOp::Const(DType::kF32, 2.0)), "%0 = const 2.0\n");
  EXPECT_EQ(ToUir(UOp::Const(DType::kF16, 0.1)), "%0 = const 0.1 : dtype=f16\n");
  EXPECT_EQ(ToUir(UOp::ConstInt(DType::kU64, -1)), "%0 = const 18446744073709551615 : dtype=u64\n");
  EXPECT_EQ(ToUir(UOp::Int(3).Cast(DType::kF32)), "%0 = cast 3 : dtype=f32\n");
  EXPECT_EQ(ToUir(UOp::Var("n", 1, 8) + UOp::ConstInt(DType::kI32, 2)),
            "%0 = var : name=n lo=1 hi=8\n%1 = add %0, 2\n");
}

TEST(Uir, LiteralsAtTheLimitsOfTheirDTypes) {
  for (const char* text : {"%0 = const 9223372036854775807 : dtype=i64\n",
                           "%0 = const -9223372036854775808 : dtype=i64\n",
                           "%0 = const 18446744073709551615 : dtype=u64\n",
                           "%0 = const 255 : dtype=u8\n", "%0 = const -2147483648\n"}) {
    absl::StatusOr<UOp> u = ParseUir(text);
    ASSERT_TRUE(u.ok()) << text << u.status();
    EXPECT_EQ(ToUir(*u), text);
  }
}

TEST(Uir, HandWrittenTextWithCommentsAndAnyIds) {
  absl::StatusOr<UOp> u = ParseUir(
      "# the loop of the seed\n"
      "\n"
      "%10 = var : name=n lo=1 hi=8   # bounded\n"
      "%7 = range %10 : idx=1 kind=loop\n"
      "%3 = cmplt %7, %10\n");
  ASSERT_TRUE(u.ok()) << u.status();
  UOp n = UOp::Var("n", 1, 8);
  EXPECT_EQ(*u, UOp::Range(n, 1).Lt(n));
}

struct BadCase {
  const char* text;
  const char* message;
};

class UirErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(UirErrors, NameLineAndColumn) {
  absl::StatusOr<UOp> u = ParseUir(GetParam().text);
  ASSERT_FALSE(u.ok()) << GetParam().text;
  EXPECT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(u.status().message()), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, UirErrors,
    ::testing::Values(
        BadCase{"", "UIR: no nodes (an empty graph)"},
        BadCase{"%0 = frob 1", "UIR line 1, column 6: unknown op 'frob'"},
        BadCase{"%0 = range 4 : idx=0 kind=loop\n%1 = add %0, %2",
                "UIR line 2, column 14: %2 is not defined above"},
        BadCase{"%0 = range 4 : idx=0", "UIR line 1, column 21: missing attribute 'kind='"},
        BadCase{"%0 = range 4 : idx=0 kind=sideways",
                "UIR line 1, column 22: unknown range kind 'sideways'"},
        BadCase{"%0 = range 4 : idx=x kind=loop",
                "UIR line 1, column 16: attribute 'idx' must be an integer, got 'x'"},
        BadCase{"%0 = add 1", "UIR line 1, column 6: add takes 2 sources, got 1"},
        BadCase{"%0 = const 1\n%0 = const 2", "UIR line 2, column 1: %0 is defined twice"},
        BadCase{"0 = const 1", "UIR line 1, column 1: expected '%'"},
        BadCase{"%0 const 1", "UIR line 1, column 4: expected '='"},
        BadCase{"%0 = add 1 2", "UIR line 1, column 12: expected ','"},
        BadCase{"%0 = add 1, bogus",
                "UIR line 1, column 13: expected %id or a constant, got 'bogus'"},
        BadCase{"%0 = const 1 : dtype=f8", "UIR line 1, column 16: unknown dtype 'f8'"},
        BadCase{"%0 = const 1 : color=red",
                "UIR line 1, column 16: unknown attribute 'color' for const"},
        BadCase{"%0 = const 1 : dtype=i32 dtype=i64",
                "UIR line 1, column 26: attribute 'dtype' given twice"},
        BadCase{"%0 = buffer : dtype=f32 slot=0", "UIR line 1, column 14: buffer needs a size"},
        BadCase{"%0 = buffer -4 : dtype=f32 slot=0",
                "UIR line 1, column 13: expected a size, got '-4'"},
        BadCase{"%0 = var : name=2x lo=0 hi=1",
                "UIR line 1, column 12: VAR name '2x' is not an identifier"},
        BadCase{"%0 = const", "UIR line 1, column 11: const needs a value"},
        BadCase{"%0 = const 1 : =3", "UIR line 1, column 16: expected key=value"},
        BadCase{"%0 = buffer 4 : slot=0", "UIR line 1, column 6: buffer needs dtype="},
        // a literal that does not fit its dtype is refused, never wrapped
        BadCase{"%0 = var : name=x lo=0 hi=9\n%1 = add %0, 4294967296",
                "UIR line 2, column 14: the literal 4294967296 does not fit i32 [-2147483648, "
                "2147483647]"},
        BadCase{"%0 = const 9223372036854775807",
                "UIR line 1, column 12: the literal 9223372036854775807 does not fit i32 "
                "[-2147483648, 2147483647]"},
        BadCase{"%0 = const 300 : dtype=u8",
                "UIR line 1, column 12: the literal 300 does not fit u8 [0, 255]"},
        BadCase{"%0 = const -1 : dtype=u32",
                "UIR line 1, column 12: the literal -1 does not fit u32 [0, 4294967295]"},
        BadCase{"%0 = const 18446744073709551615 : dtype=i64",
                "UIR line 1, column 12: the literal 18446744073709551615 does not fit i64 "
                "[-9223372036854775808, 9223372036854775807]"},
        BadCase{"%0 = const 18446744073709551616 : dtype=u64",
                "UIR line 1, column 12: expected a constant, got '18446744073709551616'"},
        // found by libFuzzer: a constant of dtype void did not print back
        BadCase{"%0 = const 1.4 : dtype=void",
                "UIR line 1, column 18: dtype void is for statements; const needs a value dtype"}));

}  // namespace
}  // namespace uopc
