#include "frontend/optim.h"

#include <algorithm>
#include <cmath>

namespace uopc {

std::vector<Tensor> Optimizer::ValuesOn(Device* device) const {
  std::vector<Tensor> on;
  for (double v : host_)
    on.push_back(Tensor::FromVector<float>({static_cast<float>(v)}, {}, DType::kF32, device));
  return on;
}

std::vector<Tensor> Optimizer::OnEveryDevice(const std::vector<double>& host) {
  host_ = host;
  elsewhere_.clear();
  std::vector<Device*> devices;
  for (Tensor* p : params_)
    if (p->device()->peer_rank() < 0 &&
        std::find(devices.begin(), devices.end(), p->device()) == devices.end())
      devices.push_back(p->device());
  std::vector<Tensor> values;
  for (Device* d : devices)
    for (Tensor& t : ValuesOn(d)) values.push_back(std::move(t));
  return values;
}

const Tensor& Optimizer::ValueOn(const std::vector<Tensor>& values, int k, Device* device) {
  for (size_t i = k; i < values.size(); i += host_.size())
    if (values[i].device() == device) return values[i];
  // another rank's device (a pipeline's other stage): made there when a step asks for it
  for (const auto& [d, t] : elsewhere_)
    if (d == device) return t[k];
  elsewhere_.emplace_back(device, ValuesOn(device));
  return elsewhere_.back().second[k];
}

void Optimizer::ZeroGrad() {
  for (Tensor* p : params_) p->ZeroGrad();
}

void Optimizer::Commit(std::vector<std::pair<Tensor*, Tensor>> updates,
                       const std::vector<Tensor*>& also, const Tensor& only_if) {
  if (only_if)
    for (auto& [dst, value] : updates)
      value = only_if.To(dst->device()).Where(value, dst->Detach());
  std::vector<Tensor*> all = also;
  for (auto& [dst, value] : updates) all.push_back(&value);
  Tensor::RealizeAll(all);
  for (auto& [dst, value] : updates) dst->Assign(value);
}

SGD::SGD(std::vector<Tensor*> params, double lr, double momentum, double weight_decay)
    : Optimizer(std::move(params), lr), momentum_(momentum), weight_decay_(weight_decay) {
  for (Tensor* p : params_)
    velocity_.push_back(Tensor::Zeros(p->shape(), p->dtype(), p->device()).Realize());
}

std::vector<Tensor> SGD::NextValues() { return OnEveryDevice({lr_}); }

void SGD::Step(const std::vector<Tensor>& values, const std::vector<Tensor*>& also,
               const Tensor& only_if) {
  std::vector<std::pair<Tensor*, Tensor>> updates;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor* p = params_[i];
    if (!p->grad()) continue;
    Tensor w = p->Detach(), g = p->grad().Detach();
    if (weight_decay_ != 0) g = g + w * weight_decay_;
    if (momentum_ != 0) {
      Tensor v = velocity_[i] * momentum_ + g;
      updates.push_back({&velocity_[i], v});
      g = v;
    }
    const Tensor& lr = ValueOn(values, 0, p->device());
    updates.push_back({p, (w - g * lr.Cast(w.dtype())).Cast(w.dtype())});
  }
  Commit(std::move(updates), also, only_if);
}

AdamW::AdamW(std::vector<Tensor*> params, double lr, double beta1, double beta2, double eps,
             double weight_decay)
    : Optimizer(std::move(params), lr),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      weight_decay_(weight_decay) {
  for (Tensor* p : params_) {
    m_.push_back(Tensor::Zeros(p->shape(), DType::kF32, p->device()).Realize());
    v_.push_back(Tensor::Zeros(p->shape(), DType::kF32, p->device()).Realize());
  }
}

std::vector<Tensor*> AdamW::State() {
  std::vector<Tensor*> s;
  for (Tensor& m : m_) s.push_back(&m);
  for (Tensor& v : v_) s.push_back(&v);
  return s;
}

std::vector<Tensor> AdamW::NextValues() {
  ++t_;
  return OnEveryDevice({lr_, 1.0 - std::pow(beta1_, static_cast<double>(t_)),
                        1.0 - std::pow(beta2_, static_cast<double>(t_))});
}

void AdamW::Step(const std::vector<Tensor>& values, const std::vector<Tensor*>& also,
                 const Tensor& only_if) {
  std::vector<std::pair<Tensor*, Tensor>> updates;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor* p = params_[i];
    if (!p->grad()) continue;
    Tensor w = p->Detach().Float(), g = p->grad().Detach().Float();
    Tensor m = m_[i] * beta1_ + g * (1.0 - beta1_);
    Tensor v = v_[i] * beta2_ + g * g * (1.0 - beta2_);
    Device* d = p->device();
    // with only_if, the step reads the moments as kept (the new ones where it holds, else
    // the old, and then the weight is kept too): each moment is then one kernel that the
    // weight's reads, not a value and a second kernel that keeps or drops it
    Tensor keep = only_if ? only_if.To(d) : Tensor();
    if (keep) m = keep.Where(m, m_[i].Detach()), v = keep.Where(v, v_[i].Detach());
    Tensor step = (m / ValueOn(values, 1, d)) / ((v / ValueOn(values, 2, d)).Sqrt() + eps_) +
                  w * weight_decay_;
    Tensor updated = (w - step * ValueOn(values, 0, d)).Cast(p->dtype());
    updates.push_back({&m_[i], m});
    updates.push_back({&v_[i], v});
    updates.push_back({p, keep ? keep.Where(updated, p->Detach()) : updated});
  }
  Commit(std::move(updates), also, {});
}

Tensor GradNorm(const std::vector<Tensor*>& params, const ShardedParams& sharded) {
  Tensor sq, parts;  // on the first gradient's device
  for (Tensor* p : params)
    if (p->grad()) {
      Tensor s = p->grad().Float().Square().Sum();
      const bool part =
          std::find(sharded.parts.begin(), sharded.parts.end(), p) != sharded.parts.end();
      Tensor& into = part ? parts : sq;
      into = into ? into + s.To(into.device()) : s;
    }
  if (parts) {
    parts = sharded.sum(parts);
    sq = sq ? sq + parts.To(sq.device()) : parts;
  }
  return sq ? sq.Sqrt() : Tensor();
}

Tensor AllFinite(const Tensor& x) {
  Tensor f = x.Float();
  return (f - f).Eq(0.0).Cast(DType::kI32).Min().Cast(DType::kBool);  // inf - inf, nan - nan: nan
}

Tensor ClipGradNorm(const std::vector<Tensor*>& params, double max_norm,
                    const ShardedParams& sharded) {
  Tensor norm = GradNorm(params, sharded);
  if (!norm) return Tensor::Scalar(0);
  Tensor scale = (Tensor::Scalar(max_norm) / (norm + 1e-6)).Minimum(Tensor::Scalar(1.0));
  for (Tensor* p : params)
    if (p->grad()) {
      p->SetGrad(p->grad() * scale.To(p->grad().device()).Cast(p->grad().dtype()));
    }
  return norm;
}

double CosineLr(int64_t step, int64_t warmup, int64_t total, double max_lr, double min_lr) {
  if (step < warmup) return max_lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (step >= total) return min_lr;
  double progress = static_cast<double>(step - warmup) /
                    static_cast<double>(std::max<int64_t>(total - warmup, 1));
  return min_lr + 0.5 * (max_lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

}  // namespace uopc
