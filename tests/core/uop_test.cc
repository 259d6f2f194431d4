#include "core/uop.h"

#include <cmath>
#include <thread>

#include <gtest/gtest.h>

namespace uopc {
namespace {

TEST(UOp, SameNodeTwiceIsTheSamePointer) {
  UOp a = UOp::Range(4, 0) * 8 + UOp::Var("n", 1, 8);
  UOp b = UOp::Range(4, 0) * 8 + UOp::Var("n", 1, 8);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a, b);
}

TEST(UOp, DifferentArgsDTypesOrSourcesAreDifferentNodes) {
  EXPECT_NE(UOp::Range(4, 0), UOp::Range(4, 1));
  EXPECT_NE(UOp::Range(4, 0), UOp::Range(4, 0, RangeKind::kReduce));
  EXPECT_NE(UOp::Int(1), UOp::ConstInt(DType::kI64, 1));
  EXPECT_NE(UOp::Var("n", 1, 8), UOp::Var("n", 1, 9));
  UOp x = UOp::Var("x", 0, 9), y = UOp::Var("y", 0, 9);
  EXPECT_NE(x + y, y + x);  // sources in order: commutativity is the simplifier's business
}

TEST(UOp, FloatConstantsCompareByBits) {
  EXPECT_NE(UOp::Const(DType::kF32, 0.0), UOp::Const(DType::kF32, -0.0));
  EXPECT_EQ(UOp::Const(DType::kF32, NAN), UOp::Const(DType::kF32, NAN));
  // values are rounded to the dtype first: 0.1 as f32 is one node
  EXPECT_EQ(UOp::Const(DType::kF32, 0.1), UOp::Const(DType::kF32, 0.1f));
  EXPECT_EQ(UOp::Const(DType::kI8, 300), UOp::Const(DType::kI8, 44));
}

TEST(UOp, DerivesDTypes) {
  UOp f = UOp::Buffer(DType::kF16, 0, 8).Index(3).Load();
  EXPECT_EQ(f.dtype(), DType::kF16);
  EXPECT_EQ((f * f).dtype(), DType::kF16);
  EXPECT_EQ(f.Lt(f).dtype(), DType::kBool);
  EXPECT_EQ(f.Cast(DType::kF32).dtype(), DType::kF32);
  EXPECT_EQ(UOp::Buffer(DType::kF16, 0, 8).Index(0).Store(f).dtype(), DType::kVoid);
  EXPECT_EQ(UOp::Range(UOp::ConstInt(DType::kI64, 5), 0).dtype(), DType::kI64);
}

TEST(UOp, NodesLeaveTheInternerWhenUnreferenced) {
  size_t before = UOp::LiveCount();
  {
    std::vector<UOp> keep;
    UOp x = UOp::Var("x", 0, 100);
    for (int i = 0; i < 1000000; ++i) {
      UOp n = x + i;  // a new CONST and a new ADD each time
      if (i % 1000 == 0) keep.push_back(n);
    }
    EXPECT_GE(UOp::LiveCount(), before + 2000);
    EXPECT_LT(UOp::LiveCount(), before + 3000) << "unreferenced nodes stayed alive";
  }
  EXPECT_EQ(UOp::LiveCount(), before);
}

TEST(UOp, ALongChainIsDestroyedWithoutRecursion) {
  size_t before = UOp::LiveCount();
  {
    UOp x = UOp::Var("x", 0, 1);
    for (int i = 0; i < 1000000; ++i) x = x + 1;
    EXPECT_EQ(x.Toposort().size(), 1000002u);  // x, the CONST 1, a million ADDs
  }
  EXPECT_EQ(UOp::LiveCount(), before);
}

TEST(UOp, ThreadsBuildingTheSameNodesGetTheSamePointers) {
  size_t before = UOp::LiveCount();
  constexpr int kThreads = 4, kNodes = 20000;
  std::vector<std::vector<const void*>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &seen] {
      UOp x = UOp::Var("x", 0, 9);
      std::vector<UOp> keep;
      for (int i = 0; i < kNodes; ++i) {
        keep.push_back(x * i + (i % 7));
        seen[t].push_back(keep.back().get());
        if (i % 3 == t % 3) UOp tmp = x + i;  // build and drop, racing the others
      }
      // all threads wait for each other while holding their nodes
      static std::atomic<int> done{0};
      done.fetch_add(1);
      while (done.load() % kThreads != 0) std::this_thread::yield();
    });
  for (auto& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t], seen[0]);
  EXPECT_EQ(UOp::LiveCount(), before);
}

TEST(UOp, ToposortPutsSourcesFirst) {
  UOp i = UOp::Range(4, 0);
  UOp e = (i * 8 + i).FloorDiv(8);
  std::vector<UOp> order = e.Toposort();
  ASSERT_EQ(order.size(), 6u);  // const 4, range, const 8, mul, add, floordiv (8 shared)
  EXPECT_EQ(order.back(), e);
  for (size_t k = 0; k < order.size(); ++k)
    for (const UOp& s : order[k].src())
      EXPECT_LT(std::find(order.begin(), order.end(), s) - order.begin(), static_cast<long>(k));
}

TEST(UOp, ConstIntValue) {
  EXPECT_EQ(UOp::Int(7).ConstIntValue(), 7);
  EXPECT_EQ(UOp::ConstBool(DType::kBool, true).ConstIntValue(), 1);
  EXPECT_EQ(UOp::Const(DType::kF32, 1.0).ConstIntValue(), std::nullopt);
  EXPECT_EQ(UOp::Var("n", 0, 1).ConstIntValue(), std::nullopt);
}

}  // namespace
}  // namespace uopc
