// Optimizers. A step builds every parameter's update lazily and realizes all of them (and
// any tensors the caller adds, such as the loss) as one plan. Values that change every
// step (the learning rate, Adam's bias corrections) enter as data, never as constants, so
// the step's graph is the same every time and compiles once (the seed's NOTES 17 lesson).
// Parameters may live on several devices: each one's state lives where it does.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "frontend/tensor.h"

namespace uopc {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor*> params, double lr)
      : params_(std::move(params)), lr_(lr) {}
  virtual ~Optimizer() = default;
  /// Updates every parameter that has a gradient, realizing `also` in the same plan. With
  /// `only_if` (a bool scalar), parameters and state change only where it is true: a step
  /// whose loss or gradients are not finite can be skipped inside the plan, without a
  /// second one.
  void Step(const std::vector<Tensor*>& also = {}, const Tensor& only_if = {}) {
    Step(NextValues(), also, only_if);
  }
  /// The values of the next step that change from step to step (the learning rate, Adam's
  /// bias corrections): 0-d f32 tensors, the same number on each device of this rank's
  /// parameters, made on the host; counts the step. What a captured step
  /// (frontend/captured_step.h) takes as inputs.
  virtual std::vector<Tensor> NextValues() = 0;
  /// Step with `values`, this step's NextValues().
  virtual void Step(const std::vector<Tensor>& values, const std::vector<Tensor*>& also,
                    const Tensor& only_if = {}) = 0;
  void ZeroGrad();
  void set_lr(double lr) { lr_ = lr; }
  double lr() const { return lr_; }

 protected:
  /// `host` (values that enter a step as data, never as constants) as 0-d f32 tensors on
  /// each device of this rank's parameters, device by device (NextValues' layout).
  std::vector<Tensor> OnEveryDevice(const std::vector<double>& host);
  /// Value `k` of this step's `values` (NextValues' layout) on `device` (another rank's: made
  /// there, once a step).
  const Tensor& ValueOn(const std::vector<Tensor>& values, int k, Device* device);
  /// This step's values on `device`.
  std::vector<Tensor> ValuesOn(Device* device) const;
  /// Realizes the new values and assigns them (all in one plan); with `only_if`, each keeps
  /// its old value where it is false.
  static void Commit(std::vector<std::pair<Tensor*, Tensor>> updates,
                     const std::vector<Tensor*>& also, const Tensor& only_if);

  std::vector<Tensor*> params_;
  double lr_;

 private:
  std::vector<double> host_;  // this step's values (OnEveryDevice)
  std::vector<std::pair<Device*, std::vector<Tensor>>> elsewhere_;
};

/// p -= lr * v, v = momentum * v + g + weight_decay * p.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor*> params, double lr, double momentum = 0, double weight_decay = 0);
  using Optimizer::Step;
  std::vector<Tensor> NextValues() override;
  void Step(const std::vector<Tensor>& values, const std::vector<Tensor*>& also,
            const Tensor& only_if = {}) override;

 private:
  double momentum_, weight_decay_;
  std::vector<Tensor> velocity_;
};

/// Adam with decoupled weight decay (Loshchilov & Hutter), as PyTorch's AdamW.
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor*> params, double lr, double beta1 = 0.9, double beta2 = 0.999,
        double eps = 1e-8, double weight_decay = 0.01);
  using Optimizer::Step;
  std::vector<Tensor> NextValues() override;
  void Step(const std::vector<Tensor>& values, const std::vector<Tensor*>& also,
            const Tensor& only_if = {}) override;
  int64_t steps() const { return t_; }
  /// Sets the step count (resuming a run: the bias corrections continue from it).
  void set_steps(int64_t t) { t_ = t; }
  /// The moments, for checkpoints: m and v of each parameter in order.
  std::vector<Tensor*> State();

 private:
  double beta1_, beta2_, eps_, weight_decay_;
  int64_t t_ = 0;
  std::vector<Tensor> m_, v_;
};

/// Parameters of which each rank holds a part (tensor parallelism): the squares of their
/// gradients are summed here, then over the ranks by `sum` (an all-reduce of a scalar).
struct ShardedParams {
  std::vector<const Tensor*> parts;
  std::function<Tensor(const Tensor&)> sum;
};

/// The global L2 norm of the gradients (lazy, f32, on the first gradient's device; a null
/// Tensor when no parameter has one), over every rank's part of `sharded` ones.
Tensor GradNorm(const std::vector<Tensor*>& params, const ShardedParams& sharded = {});
/// Scales every gradient (lazily) so that their global L2 norm is at most `max_norm`;
/// returns the norm before scaling (lazy, on the first gradient's device).
Tensor ClipGradNorm(const std::vector<Tensor*>& params, double max_norm,
                    const ShardedParams& sharded = {});
/// A bool scalar: whether `x` (any shape) is finite everywhere (lazy).
Tensor AllFinite(const Tensor& x);

/// Linear warmup to `max_lr` over `warmup` steps, then cosine decay to `min_lr` at `total`.
double CosineLr(int64_t step, int64_t warmup, int64_t total, double max_lr, double min_lr);

}  // namespace uopc
