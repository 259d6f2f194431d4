// SplitGatedLoops: a kernel whose innermost loop is cut by constant gates (three heads-split
// gradients joined into one, as a GPT's q, k and v) runs one loop per piece, a divided index
// as two loops, with no gate, division or remainder left and the same values; a kernel with
// nothing to cut, or with a reduction, comes back as it was.
#include "passes/split_gated_loops.h"

#include <gtest/gtest.h>

#include "core/uir.h"
#include "tests/testing/lowered_kernels.h"

namespace uopc {
namespace {

using testing::Execute;
using testing::kCases;
using testing::Kernels;

// out (2, 3, 48) = three (2, 2 heads, 3, 8) inputs, each as (2, 3, 16), side by side: the
// kernel as the pipeline has it before this pass (`UOPC_PRINT_AFTER=simplify uopc render`).
constexpr char kJoined[] = R"(%0 = buffer 288 : dtype=f32 slot=3
%1 = range 2 : idx=0 kind=loop
%2 = mul %1, 144
%3 = range 3 : idx=1 kind=loop
%4 = mul %3, 48
%5 = add %2, %4
%6 = range 48 : idx=2 kind=loop
%7 = add %5, %6
%8 = index %0, %7
%9 = cmplt %6, 16
%10 = buffer 96 : dtype=f32 slot=0
%11 = mul %1, 48
%12 = floordiv %6, 8
%13 = mul %12, 24
%14 = add %11, %13
%15 = mul %3, 8
%16 = add %14, %15
%17 = mod %6, 8
%18 = add %16, %17
%19 = index %10, %18
%20 = load %19
%21 = where %9, %20, 0.0
%22 = cmplt 15, %6
%23 = cmplt %6, 32
%24 = and %22, %23
%25 = buffer 96 : dtype=f32 slot=1
%26 = add %13, -48
%27 = add %11, %26
%28 = add %27, %15
%29 = add %28, %17
%30 = index %25, %29
%31 = load %30
%32 = where %24, %31, 0.0
%33 = add %21, %32
%34 = cmplt 31, %6
%35 = buffer 96 : dtype=f32 slot=2
%36 = add %13, -96
%37 = add %11, %36
%38 = add %37, %15
%39 = add %38, %17
%40 = index %35, %39
%41 = load %40
%42 = where %34, %41, 0.0
%43 = add %33, %42
%44 = store %8, %43
%45 = end %44, %1, %3, %6
%46 = sink %45
)";

int Count(const UOp& kernel, Ops op) {
  int n = 0;
  for (const UOp& u : kernel.Toposort()) n += u.is(op);
  return n;
}

TEST(SplitGatedLoops, JoinedHeadsRunAsContiguousLoopsPerPiece) {
  absl::StatusOr<UOp> k = ParseUir(kJoined);
  ASSERT_TRUE(k.ok()) << k.status();
  const UOp split = SplitGatedLoop(*k);
  ASSERT_NE(split, *k);
  EXPECT_EQ(Count(split, Ops::STORE), 3);
  EXPECT_EQ(Count(split, Ops::CMPLT), 0);
  EXPECT_EQ(Count(split, Ops::FLOORDIV) + Count(split, Ops::MOD), 0);
  // the two outer loops, then per piece a loop of the heads and one of a head's 8 columns
  EXPECT_EQ(Count(split, Ops::RANGE), 2 + 3 * 2);
  // the join's values: out[b][t][16 p + 8 h + d] = in_p[b][h][t][d] (the interpreter cannot
  // run the kernel before: it reads every piece's input at every element, past their ends)
  const std::vector<std::vector<float>> got = Execute(split, 5);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t)
      for (int j = 0; j < 48; ++j) {
        const int p = j / 16, h = j % 16 / 8, d = j % 8;
        ASSERT_EQ(got[3][(b * 3 + t) * 48 + j], got[p][((b * 2 + h) * 3 + t) * 8 + d]);
      }
}

TEST(SplitGatedLoops, TheTensorJoinReachesThePass) {
  // the same join as a tensor graph, through the whole pipeline
  const std::string uir = R"(%0 = buffer 96 : dtype=f32 slot=0
%1 = reshape %0, 2, 2, 3, 8
%2 = permute %1 : axes=0,2,1,3
%3 = reshape %2, 2, 3, 16
%4 = pad %3, 0, 0, 0, 0, 0, 16
%5 = buffer 96 : dtype=f32 slot=1
%6 = reshape %5, 2, 2, 3, 8
%7 = permute %6 : axes=0,2,1,3
%8 = reshape %7, 2, 3, 16
%9 = pad %8, 0, 0, 0, 0, 16, 0
%10 = add %4, %9
%11 = sink %10
)";
  const std::vector<UOp> kernels = Kernels(uir);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(Count(kernels[0], Ops::STORE), 2);
  EXPECT_EQ(Count(kernels[0], Ops::CMPLT), 0);
}

TEST(SplitGatedLoops, WhatHasNoGateOrAReductionIsLeftAsItWas) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    for (const UOp& k : Kernels(c.uir)) EXPECT_EQ(SplitGatedLoop(k), k);
  }
}

}  // namespace
}  // namespace uopc
