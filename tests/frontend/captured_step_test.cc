// CapturedStep: a step captured once runs again on other inputs and VAR values, with the
// results (and the in-place writes) of running the step itself, and builds no graph.
#include <gtest/gtest.h>

#include "tests/testing/error_of.h"

#include <functional>
#include <string>
#include <vector>

#include "frontend/captured_step.h"

namespace uopc {
namespace {

using testing::ErrorOf;

// Writes x at position pos of the log, and returns the sum of the log up to it, times w.
struct Logger {
  Tensor log = Tensor::Zeros({8}).Realize();
  Tensor w = Tensor::FromVector<float>({2}, {1}).Realize();
  std::vector<Tensor> operator()(const std::vector<Tensor>& in, int64_t pos) {
    SymInt p = SymInt::Variable("pos", 0, 7, pos);
    log.Slice(0, p, p + 1).Assign(in[0]);
    return {log.Slice(0, 0, p + 1).Sum({0}, true) * w};
  }
};

TEST(CapturedStep, RunsAgainWithOtherInputsAndVarsAndWritesInPlace) {
  Logger l;
  std::vector<Tensor> out;
  CapturedStep step([&](const std::vector<Tensor>& in) { return l(in, 0); },
                    {Tensor::FromVector<float>({1}, {1})}, &out);
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{2}));
  const int64_t plans = Runtime::Get().executor().stats().plans;
  const size_t built = Runtime::Get().plans().size();
  float sum = 1;
  for (int64_t pos = 1; pos < 8; ++pos) {
    float x = static_cast<float>(pos * 10);
    sum += x;
    std::vector<Tensor> r = step.Run({Tensor::FromVector<float>({x}, {1})}, {{"pos", pos}});
    EXPECT_EQ(r[0].ToVector<float>(), (std::vector<float>{2 * sum})) << pos;
  }
  EXPECT_EQ(l.log.ToVector<float>(), (std::vector<float>{1, 10, 20, 30, 40, 50, 60, 70}));
  // a position outside the VAR's bounds: refused before anything runs, the log unchanged
  EXPECT_EQ(ErrorOf([&] { step.Run({Tensor::FromVector<float>({5}, {1})}, {{"pos", 8}}); }),
            "run plan: VAR pos = 8 is outside its bounds [0, 7]; nothing ran");
  EXPECT_EQ(l.log.ToVector<float>(), (std::vector<float>{1, 10, 20, 30, 40, 50, 60, 70}));
  EXPECT_EQ(Runtime::Get().executor().stats().plans - plans, 7);
  EXPECT_EQ(Runtime::Get().plans().size(), built);  // no graph, no plan built
}

TEST(CapturedStep, SymbolicOutputShapesFollowTheVars) {
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {6}).Realize();
  std::vector<Tensor> out;
  CapturedStep step(
      [&](const std::vector<Tensor>& in) {
        SymInt n = SymInt::Variable("n", 1, 6, 2);
        return std::vector<Tensor>{in[0].Slice(0, 0, n) * 3};
      },
      {x}, &out);
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{3, 6}));
  Tensor r = step.Run({x}, {{"n", 4}})[0];
  EXPECT_EQ(ShapeString(r.shape()), "(n)");
  EXPECT_EQ(r.shape(0).value(), 4);
  EXPECT_EQ(r.ToVector<float>(), (std::vector<float>{3, 6, 9, 12}));
}

TEST(CapturedStep, BadStepsAndRunsAreRefused) {
  Tensor a = Tensor::FromVector<float>({1, 2}, {2}).Realize();
  Tensor unused = Tensor::FromVector<float>({1}, {1}).Realize();
  std::vector<Tensor> out;
  EXPECT_EQ(ErrorOf([&] {
              CapturedStep([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{a * 2}; },
                           {unused}, &out);
            }),
            "captured step: input 0 of shape (1) is not read by the step's plan; expected every "
            "input read");
  EXPECT_EQ(ErrorOf([&] {
              CapturedStep(
                  [&](const std::vector<Tensor>& in) {
                    (in[0] + 1).Realize();
                    return std::vector<Tensor>{in[0] * 2};
                  },
                  {a}, &out);
            }),
            "captured step: the step ran 2 plans; expected one (realize what it needs before "
            "capturing)");
  CapturedStep ok([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2}; },
                  {a}, &out);
  EXPECT_EQ(ErrorOf([&] { ok.Run({Tensor::FromVector<float>({1, 2, 3}, {3})}); }),
            "captured step: input 0 of shape (3), dtype f32 on CPU:0; expected another size, "
            "dtype f32 on CPU:0");
  EXPECT_EQ(ErrorOf([&] { ok.Run({a}, {{"T", 3}}); }),
            "captured step: a value for VAR T, which the step does not read");
  EXPECT_EQ(ok.Run({Tensor::FromVector<float>({5, 6}, {2})})[0].ToVector<float>(),
            (std::vector<float>{10, 12}));
}

}  // namespace
}  // namespace uopc
