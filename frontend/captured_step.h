// CapturedStep: a step of tensor code captured once, as the plan that realized its
// outputs, and run again without building its graph: on other input buffers and other VAR
// values, writing what it wrote in place again. What a decode step needs to cost what its
// kernels cost (as tinygrad's TinyJit and CUDA graphs do).
//
//   CapturedStep decode([&](const std::vector<Tensor>& in) {
//     return std::vector<Tensor>{model.Forward(in[0], &cache)};    // one plan
//   }, {token}, &logits);
//   ...
//   logits = decode.Run({next_token}, {{"pos", cache.pos()}})[0];
//
// The step must realize its outputs with one plan (nothing else realized on the way), read
// each input tensor directly, and be the same computation for every run but for its inputs
// and VARs: host-side state that the step changes (a cache's position) is the caller's to
// keep, and checks that the step makes on its values are not made again (the VARs' bounds
// and the indices' are: every launch checks the VARs, and every run the indices).
//
// A training step captures the same way with its state (CaptureUpdate): it realizes its own
// plan and assigns new values to tensors it reads (the parameters, the optimizer's moments);
// each run reads their current values and assigns them the new ones, as the step did.
//
//   auto train = CapturedStep::CaptureUpdate([&](const std::vector<Tensor>& in) {
//     Tensor loss = model.Forward(in[0]).CrossEntropy(in[1]);
//     loss.Backward();
//     opt.Step(std::vector<Tensor>(in.begin() + 2, in.end()), {&loss});   // one plan
//     return std::vector<Tensor>{loss};
//   }, inputs, state, &outputs);
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

#include "frontend/realize.h"
#include "frontend/tensor.h"

namespace uopc {

class CapturedStep {
 public:
  using Step = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;
  /// Runs `step` on `inputs` (realized here if they are not), realizes what it returns (each
  /// output a new, unrealized tensor) into `outputs`, and keeps the plan. Throws uopc::Error
  /// if that took other than one plan, or an input is not one of the plan's buffers.
  CapturedStep(const Step& step, std::vector<Tensor> inputs, std::vector<Tensor>* outputs);

  /// Runs `step` on `inputs`: a step that realizes what it returns itself, with one plan,
  /// and assigns each tensor of `state` (realized) a value that plan made. Its outputs go to
  /// `outputs`, and the plan is kept. What the step throws is thrown; a step done that cannot
  /// run again from its plan (another number of plans, an input it does not read, an output
  /// or a new state value the plan did not make, random numbers drawn on the host, which a
  /// run would repeat) is FAILED_PRECONDITION, saying why. The state tensors must outlive
  /// the captured step (it keeps their addresses); a run that fails leaves them as they were.
  static absl::StatusOr<CapturedStep> CaptureUpdate(const Step& step, std::vector<Tensor> inputs,
                                                    std::vector<Tensor*> state,
                                                    std::vector<Tensor>* outputs);

  /// The captured plan on `inputs` (each of the captured input's dtype, shape and device)
  /// with `vars` (the captured values for VARs not given): its outputs, realized. A step
  /// with state reads each state tensor's value and assigns it its new one.
  std::vector<Tensor> Run(std::vector<Tensor> inputs, const VarValues& vars = {}) const;

 private:
  CapturedStep() = default;
  /// Keeps `run` as the step's plan: its inputs and outputs found among `inputs`,
  /// `outputs` (the plan's outputs in order, or, where the step realized them itself, found
  /// among the plan's) and the state's values (`state_was`: the buffers before the step).
  absl::Status Keep(Runtime::PlanRun run, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& outputs, bool step_realized,
                    const std::vector<Buffer>& state_was);

  struct Output {
    TensorShape shape;
    DType dtype;
    int slot = -1;  // the plan output it is
  };
  struct State {
    Tensor* tensor;
    int input, output;  // the plan input its value is, the plan output its new value
    DType dtype = DType::kF32;
    int64_t count = 0;
    Device* device = nullptr;
  };
  std::shared_ptr<const Plan> plan_;
  std::vector<Buffer> bound_;  // the plan's input buffers, as captured
  std::vector<int> slot_;      // the plan input each step input is
  VarValues vars_;
  std::vector<Runtime::CheckAt> checks_;  // checked again at every run
  std::vector<Output> outputs_;
  std::vector<State> state_;
};

}  // namespace uopc
