// CapturedStep: a step captured once runs again on other inputs and VAR values, with the
// results (and the in-place writes) of running the step itself, and builds no graph.
#include "frontend/captured_step.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "frontend/loss_scaler.h"
#include "frontend/nn.h"
#include "frontend/optim.h"
#include "tests/testing/error_of.h"

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

// A training step (forward, backward, AdamW) captured with its state: each run updates the
// parameters and the moments as the step itself does, bit for bit, and builds no graph.
struct TinyModel {
  Linear a{3, 4}, b{4, 2};
  AdamW opt;
  TinyModel() : opt(Parameters(), 1e-2) {}
  std::vector<Tensor*> Parameters() { return {&a.weight, &a.bias, &b.weight, &b.bias}; }
  std::vector<Tensor*> State() {
    std::vector<Tensor*> s = Parameters(), m = opt.State();
    s.insert(s.end(), m.begin(), m.end());
    return s;
  }
  // the step on inputs (x, y, then the optimizer's values)
  std::vector<Tensor> Step(const std::vector<Tensor>& in) {
    Tensor loss = (b.Forward(a.Forward(in[0]).Gelu()) - in[1]).Square().Mean();
    loss.Backward();
    opt.Step(std::vector<Tensor>(in.begin() + 2, in.end()), {&loss});
    return {loss};
  }
  static std::vector<Tensor> Batch(int i) {
    std::vector<float> x(6), y(4);
    for (int k = 0; k < 6; ++k) x[k] = static_cast<float>((k + 1) * (i + 2) % 7) / 7;
    for (int k = 0; k < 4; ++k) y[k] = static_cast<float>((k * 3 + i) % 5) / 5;
    return {Tensor::FromVector(x, {2, 3}), Tensor::FromVector(y, {2, 2})};
  }
  std::vector<Tensor> Inputs(int i) {
    std::vector<Tensor> in = Batch(i), values = opt.NextValues();
    in.insert(in.end(), values.begin(), values.end());
    return in;
  }
};

TEST(CapturedStep, ATrainingStepRunsAgainWithItsStateAsTheStepDoes) {
  Tensor::ManualSeed(1);
  TinyModel eager;
  Tensor::ManualSeed(1);
  TinyModel captured;
  std::vector<float> eager_losses, losses;
  for (int i = 0; i < 6; ++i) eager_losses.push_back(eager.Step(eager.Inputs(i))[0].Item<float>());
  std::vector<Tensor> out;
  absl::StatusOr<CapturedStep> step =
      CapturedStep::CaptureUpdate([&](const std::vector<Tensor>& in) { return captured.Step(in); },
                                  captured.Inputs(0), captured.State(), &out);
  ASSERT_TRUE(step.ok()) << step.status();
  losses.push_back(out[0].Item<float>());
  const size_t built = Runtime::Get().plans().size();
  for (int i = 1; i < 6; ++i) losses.push_back(step->Run(captured.Inputs(i))[0].Item<float>());
  EXPECT_EQ(Runtime::Get().plans().size(), built);  // no graph, no plan built
  EXPECT_EQ(losses, eager_losses);
  EXPECT_GT(losses[0], losses[5]);  // (it trains)
  std::vector<Tensor*> want = eager.State(), got = captured.State();
  for (size_t s = 0; s < want.size(); ++s)
    EXPECT_EQ(got[s]->ToVector<float>(), want[s]->ToVector<float>()) << "state tensor " << s;
  EXPECT_EQ(captured.opt.steps(), 6);
}

// With a loss scaler among the state: a scale so large that the first steps' gradients
// overflow is halved step by step, those steps skipped, in the captured runs as in the steps.
TEST(CapturedStep, ALossScalersStateRunsAgainAsTheStepsDo) {
  struct Scaled : TinyModel {
    LossScaler scaler{LossScaler::Options{std::ldexp(1.0, 121)}};
    std::vector<Tensor> Step(const std::vector<Tensor>& in) {
      Tensor loss = (b.Forward(a.Forward(in[0]).Gelu()) - in[1]).Square().Mean() * 1e3;
      scaler.Scale(loss).Backward();
      scaler.Unscale(Parameters());
      Tensor finite = AllFinite(GradNorm(Parameters()));
      std::vector<Tensor*> also = scaler.Update(finite);
      also.push_back(&loss);
      also.push_back(&finite);
      opt.Step(std::vector<Tensor>(in.begin() + 2, in.end()), also, finite);
      scaler.Advance();
      return {loss, finite};
    }
  };
  Tensor::ManualSeed(1);
  Scaled eager;
  Tensor::ManualSeed(1);
  Scaled captured;
  std::vector<double> eager_scales, scales;
  for (int i = 0; i < 8; ++i) {
    if (!eager.Step(eager.Inputs(i))[1].Item<bool>()) eager.opt.set_steps(eager.opt.steps() - 1);
    eager_scales.push_back(eager.scaler.scale());
  }
  std::vector<Tensor*> state = captured.State(), scaler = captured.scaler.State();
  state.insert(state.end(), scaler.begin(), scaler.end());
  std::vector<Tensor> out;
  absl::StatusOr<CapturedStep> step =
      CapturedStep::CaptureUpdate([&](const std::vector<Tensor>& in) { return captured.Step(in); },
                                  captured.Inputs(0), state, &out);
  ASSERT_TRUE(step.ok()) << step.status();
  for (int i = 0; i < 8; ++i) {
    if (i > 0) out = step->Run(captured.Inputs(i));
    if (!out[1].Item<bool>()) captured.opt.set_steps(captured.opt.steps() - 1);
    scales.push_back(captured.scaler.scale());
  }
  EXPECT_EQ(scales, eager_scales);
  EXPECT_LT(scales.back(), scales.front());  // (steps were skipped, the scale halved)
  EXPECT_EQ(captured.opt.steps(), eager.opt.steps());
  EXPECT_LT(eager.opt.steps(), 8);
  EXPECT_GT(eager.opt.steps(), 0) << ::testing::PrintToString(scales);
  std::vector<Tensor*> want = eager.State(), got = captured.State();
  for (size_t s = 0; s < want.size(); ++s)
    EXPECT_EQ(got[s]->ToVector<float>(), want[s]->ToVector<float>()) << "state tensor " << s;
}

TEST(CapturedStep, ATrainingStepThatCannotRunAgainIsSaidWithTheStepDone) {
  Tensor::ManualSeed(1);
  TinyModel m;
  std::vector<Tensor> out;
  auto capture = [&](const CapturedStep::Step& step, std::vector<Tensor*> state) {
    absl::StatusOr<CapturedStep> c = CapturedStep::CaptureUpdate(step, m.Inputs(0), state, &out);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
    return std::string(c.status().message());
  };
  EXPECT_EQ(capture(
                [&](const std::vector<Tensor>& in) {
                  return std::vector<Tensor>{m.Step(in)[0] * 2};  // (not realized by the step)
                },
                m.State()),
            "captured step: output 0 of shape () is not one the step's plan made; expected "
            "each output realized by the step");
  Tensor frozen = Tensor::Ones({2}).Realize();  // read by the step, never assigned
  std::vector<Tensor*> state = m.State();
  state.push_back(&frozen);
  EXPECT_EQ(capture(
                [&](const std::vector<Tensor>& in) {
                  std::vector<Tensor> moved{in[0] * frozen.Sum(), in[1]};
                  moved.insert(moved.end(), in.begin() + 2, in.end());
                  return m.Step(moved);
                },
                state),
            "captured step: state tensor 12 of shape (2) is not assigned a value the step's "
            "plan made; expected each state tensor read and assigned anew");
  EXPECT_EQ(capture(
                [&](const std::vector<Tensor>& in) {
                  (in[0] + 1).Realize();
                  return m.Step(in);
                },
                m.State()),
            "captured step: the step ran 2 plans; expected one");
  EXPECT_EQ(capture(
                [&](const std::vector<Tensor>& in) {
                  std::vector<Tensor> dropped{in[0] * Tensor::Rand({2, 3}), in[1]};
                  dropped.insert(dropped.end(), in.begin() + 2, in.end());
                  return m.Step(dropped);
                },
                m.State()),
            "captured step: the step draws random numbers on the host (dropout?), which every "
            "run would repeat; expected none");
  EXPECT_EQ(m.opt.steps(), 4);  // each step was done
}

}  // namespace
}  // namespace uopc
