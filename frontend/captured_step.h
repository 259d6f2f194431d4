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
#pragma once

#include <functional>
#include <memory>
#include <vector>

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

  /// The captured plan on `inputs` (each of the captured input's dtype, shape and device)
  /// with `vars` (the captured values for VARs not given): its outputs, realized.
  std::vector<Tensor> Run(std::vector<Tensor> inputs, const VarValues& vars = {}) const;

 private:
  struct Output {
    TensorShape shape;
    DType dtype;
  };
  std::shared_ptr<const Plan> plan_;
  std::vector<Buffer> bound_;  // the plan's input buffers, as captured
  std::vector<int> slot_;      // the plan input each step input is
  VarValues vars_;
  std::vector<Runtime::CheckAt> checks_;  // checked again at every run
  std::vector<Output> outputs_;
};

}  // namespace uopc
