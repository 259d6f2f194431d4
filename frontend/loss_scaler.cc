#include "frontend/loss_scaler.h"

#include <string>

#include "frontend/error.h"

namespace uopc {

LossScaler::LossScaler(Options o, DeviceRef device) : interval_(o.interval) {
  if (!(o.scale > 0) || o.clean_steps < 0 || o.interval < 1)
    ThrowInvalid("loss scaler: scale " + std::to_string(o.scale) + ", clean steps " +
                 std::to_string(o.clean_steps) + ", interval " + std::to_string(o.interval) +
                 "; expected a scale > 0, clean steps >= 0 and an interval >= 1");
  Device* d = device.get();
  scale_ = Tensor::FromVector(std::vector<float>{static_cast<float>(o.scale)}, {}, DType::kF32, d);
  clean_ =
      Tensor::FromVector(std::vector<float>{static_cast<float>(o.clean_steps)}, {}, DType::kF32, d);
}

Tensor LossScaler::Scale(const Tensor& loss) const {
  return loss.Float() * scale_.To(loss.device());
}

void LossScaler::Unscale(const std::vector<Tensor*>& params) const {
  for (Tensor* p : params) {
    Tensor g = p->grad();
    if (!g) continue;
    Tensor inverse = scale_.To(g.device()).Reciprocal();
    p->SetGrad((g.Float() * inverse).Cast(g.dtype()));
  }
}

std::vector<Tensor*> LossScaler::Update(const Tensor& finite) {
  Tensor ok = finite.To(scale_.device());
  Tensor clean = ok.Where(clean_ + 1.0, clean_ * 0.0);
  Tensor grow = clean.Ge(Tensor::Scalar(static_cast<double>(interval_)));
  next_scale_ = ok.Where(grow.Where(scale_ * 2.0, scale_), scale_ * 0.5);
  next_clean_ = grow.Where(clean * 0.0, clean);
  return {&next_scale_, &next_clean_};
}

void LossScaler::Advance() {
  if (!next_scale_) ThrowInvalid("loss scaler: Advance without an Update");
  scale_ = next_scale_.Realize(), clean_ = next_clean_.Realize();
  next_scale_ = next_clean_ = Tensor();
}

double LossScaler::scale() const { return scale_.Item<float>(); }
int64_t LossScaler::clean_steps() const { return static_cast<int64_t>(clean_.Item<float>()); }

}  // namespace uopc
