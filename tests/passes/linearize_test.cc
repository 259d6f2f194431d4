#include "passes/linearize.h"

#include <gtest/gtest.h>

#include "core/uir.h"
#include "tests/testing/seed_program.h"

namespace uopc {
namespace {

// The program as "op" lines, indented by loop depth (constants left out).
std::string Shape(const std::vector<UOp>& p) {
  std::string s;
  int depth = 0;
  for (const UOp& u : p) {
    if (u.is(Ops::CONST)) continue;
    if (u.is(Ops::END)) depth -= static_cast<int>(u.src().size()) - 1;
    s += std::string(2 * depth, ' ') + std::string(OpName(u.op()));
    if (u.is(Ops::RANGE)) s += " " + std::to_string(u.arg().Get<RangeArg>().idx);
    s += "\n";
    if (u.is(Ops::RANGE)) ++depth;
  }
  return s;
}

TEST(Linearize, SeedProgramHoistsTheTripCountAboveBothLoops) {
  absl::StatusOr<std::vector<UOp>> p = Linearize(testing::SeedTripCountKernel());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Shape(*p),
            "buffer\n"
            "alloc\n"
            "buffer\n"
            "index\n"
            "load\n"  // n = data1[0], above both loops
            "buffer\n"
            "range 0\n"
            "  index\n"
            "  after\n"
            "  index\n"
            "  store\n"  // acc = 0
            "  mul\n"    // i*8, hoisted out of the inner loop
            "  range 1\n"
            "    after\n"
            "    index\n"
            "    load\n"
            "    add\n"
            "    index\n"
            "    load\n"
            "    add\n"
            "    store\n"
            "  end\n"
            "  after\n"
            "  index\n"
            "  load\n"
            "  store\n"
            "end\n"
            "sink\n");
}

TEST(Linearize, EveryNodeOnceAndAfterItsSources) {
  std::vector<UOp> p = *Linearize(testing::SeedTripCountKernel());
  EXPECT_EQ(p.size(), testing::SeedTripCountKernel().Toposort().size());
  for (size_t k = 0; k < p.size(); ++k)
    for (const UOp& s : p[k].src())
      EXPECT_LT(std::find(p.begin(), p.end(), s) - p.begin(), static_cast<long>(k))
          << OpName(p[k].op());
}

TEST(Linearize, ALoopVariableUsedOutsideItsLoopIsAnError) {
  UOp out = UOp::Buffer(DType::kI32, 0, 4);
  UOp i = UOp::Range(4, 3);
  absl::StatusOr<std::vector<UOp>> p = Linearize(UOp::Sink({out.Index(i).Store(i)}));  // no END
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(std::string(p.status().message()),
            "linearize: RANGE idx=3 is not closed by an END; expected one END per loop");
}

TEST(Linearize, OneRangeClosedTwiceIsAnError) {
  UOp out = UOp::Buffer(DType::kI32, 0, 4);
  UOp i = UOp::Range(4, 2);
  absl::StatusOr<std::vector<UOp>> p =
      Linearize(UOp::Sink({out.Index(i).Store(i).End({i}), out.Index(i).Store(i * 2).End({i})}));
  EXPECT_EQ(std::string(p.status().message()),
            "linearize: RANGE idx=2 is closed by two ENDs; expected one RANGE per loop");
}

TEST(Linearize, NestedLoopsInOneEnd) {
  UOp out = UOp::Buffer(DType::kI32, 0, 12);
  UOp i = UOp::Range(3, 0), j = UOp::Range(4, 1);
  std::vector<UOp> p = *Linearize(UOp::Sink({out.Index(i * 4 + j).Store(j).End({i, j})}));
  EXPECT_EQ(Shape(p),
            "buffer\nrange 0\n  mul\n  range 1\n    add\n    index\n    store\nend\nsink\n");
}

}  // namespace
}  // namespace uopc
