// Dynamic loss scaling for f16 training, with PyTorch's GradScaler semantics: the loss is
// multiplied by the scale before backward, so that small gradients survive f16's range, and
// the gradients are divided by it before anything reads them; a step whose gradients are
// not finite is skipped (by the optimizer's only_if) and halves the scale, and `interval`
// clean steps in a row double it. The scale and the count live on the device and change
// inside the step's plan: no host round trip.
//   Tensor loss = ...;  scaler.Scale(loss).Backward();  scaler.Unscale(params);
//   Tensor finite = AllFinite(GradNorm(params));
//   std::vector<Tensor*> also = scaler.Update(finite);  also.push_back(&loss);
//   opt.Step(also, finite);  scaler.Advance();
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/tensor.h"

namespace uopc {

class LossScaler {
 public:
  struct Options {
    double scale = 65536;  // 2^16, GradScaler's start
    int64_t clean_steps = 0;
    int64_t interval = 2000;
  };
  LossScaler() : LossScaler(Options{}) {}
  explicit LossScaler(Options o, DeviceRef device = {});

  /// loss * scale (lazy; f32).
  Tensor Scale(const Tensor& loss) const;
  /// Divides the gradient of every parameter that has one by the scale (lazily).
  void Unscale(const std::vector<Tensor*>& params) const;
  /// The next scale and count after a step whose gradients are `finite` (a bool scalar),
  /// lazily: realize them with the step (add these to the optimizer's `also`), then Advance.
  std::vector<Tensor*> Update(const Tensor& finite);
  /// Takes the values of the last Update (realized by now) as the scale and count.
  void Advance();

  /// The scale and the count as tensors (what a step updates: a captured step's state).
  std::vector<Tensor*> State() { return {&scale_, &clean_}; }
  /// The scale and the clean steps since it last changed (read from the device).
  double scale() const;
  int64_t clean_steps() const;

 private:
  int64_t interval_;
  Tensor scale_, clean_;            // 0-d f32 tensors
  Tensor next_scale_, next_clean_;  // made by Update
};

}  // namespace uopc
