#include "frontend/nn.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "frontend/autocast.h"

namespace uopc {
namespace {

Tensor Param(Tensor t) {
  t.Realize();
  t.RequiresGrad();
  return t;
}

// f: a replicated value entering rank-specific work (identity; the gradient is summed).
// Under an Autocast it enters in the low dtype that its matmul reads, so that its gradient
// is summed over the ranks in that dtype too (half the bytes).
Tensor EnterTensorParallel(const TensorParallel& tp, const Tensor& x) {
  if (tp.size == 1) return x;
  const std::optional<DType> low = Autocast::Current();
  return (low && x.dtype() == DType::kF32 ? x.Cast(*low) : x).Collective(
      {CollectiveKind::kIdentity, CollectiveKind::kAllReduce, Ops::ADD, tp.group, tp.size});
}

// y + bias in y's dtype (a half under an Autocast: the bias rounded to it, as PyTorch's)
Tensor AddBias(const Tensor& y, const Tensor& bias) {
  if (!bias) return y;
  return y + (IsHalf(y.dtype()) && !IsHalf(bias.dtype()) ? bias.Cast(y.dtype()) : bias);
}

// A row-parallel Linear: this rank's rows of the weight times its part of x, summed over the
// ranks (g), then the bias, once.
Tensor RowParallel(const TensorParallel& tp, const Linear& l, const Tensor& x) {
  if (tp.size == 1) return l.Forward(x);
  Tensor y = x.Matmul(l.weight).Collective(
      {CollectiveKind::kAllReduce, CollectiveKind::kIdentity, Ops::ADD, tp.group, tp.size});
  return AddBias(y, l.bias);
}

}  // namespace

std::optional<TensorParallelSplit> TensorParallelSplitOf(const GptConfig& c,
                                                         const std::string& name) {
  const int64_t C = c.dim;
  struct Rule {
    const char* suffix;
    TensorParallelSplit split;
  };
  const Rule table[] = {
      {"attn.c_attn.weight", {{C, 3, C}, 2, 1}}, {"attn.c_attn.bias", {{3, C}, 1, 0}},
      {"attn.c_proj.weight", {{C, C}, 0, 0}},    {"mlp.c_fc.weight", {{C, 4 * C}, 1, 1}},
      {"mlp.c_fc.bias", {{4 * C}, 0, 0}},        {"mlp.c_proj.weight", {{4 * C, C}, 0, 0}},
  };
  for (const Rule& r : table)
    if (absl::EndsWith(name, r.suffix) && name.find("h.") != std::string::npos) return r.split;
  return std::nullopt;
}

Tensor TakeShard(const Tensor& full, const TensorParallelSplit& split, int rank, int size) {
  const int64_t part = split.view[split.axis] / size;
  TensorShape shape = full.shape();
  shape[split.dim] = shape[split.dim].value() / size;
  return full.Reshape(TensorShape(split.view.begin(), split.view.end()))
      .Slice(split.axis, rank * part, (rank + 1) * part)
      .Reshape(shape)
      .Realize();
}

NamedParams Module::NamedParameters() {
  NamedParams out;
  Params("", out);
  return out;
}

std::vector<Tensor*> Module::Parameters() {
  std::vector<Tensor*> out;
  for (auto& [n, t] : NamedParameters()) out.push_back(t);
  return out;
}

namespace {

// `p` on `d`, realized there, still a leaf that requires grad if it did; on another rank's
// device nothing moves (that rank holds it: every rank made the same module).
void MoveParameter(Tensor* p, Device* d) {
  if (p->device() == d) return;
  Tensor moved;
  if (d->peer_rank() >= 0) {
    absl::StatusOr<Buffer> held_there = d->Allocate(p->dtype(), p->numel().value());
    ThrowIfError(held_there.status());
    moved = Tensor::FromBuffer(*std::move(held_there), p->shape());
  } else {
    moved = p->Detach().To(d);
  }
  moved.Realize();
  if (p->requires_grad()) moved.RequiresGrad();
  *p = moved;
}

}  // namespace

void Module::To(DeviceRef device) {
  Device* d = device.get();
  for (Tensor* p : Parameters()) MoveParameter(p, d);
}

Device* Module::device() {
  std::vector<Tensor*> params = Parameters();
  return params.empty() ? nullptr : params.front()->device();
}

Linear::Linear(int64_t in, int64_t out, bool has_bias, double init_std)
    : weight(Param(Tensor::Randn({in, out}) * init_std)) {
  if (has_bias) bias = Param(Tensor::Zeros({out}));
}

Tensor Linear::Forward(const Tensor& x) const { return AddBias(x.Matmul(weight), bias); }

void Linear::Params(const std::string& prefix, NamedParams& out) {
  out.push_back({prefix + "weight", &weight});
  if (bias) out.push_back({prefix + "bias", &bias});
}

Embedding::Embedding(int64_t num, int64_t dim, double init_std)
    : weight(Param(Tensor::Randn({num, dim}) * init_std)) {}

Tensor Embedding::Forward(const Tensor& idx) const {
  TensorShape shape = idx.shape();
  shape.push_back(weight.shape(1));
  return weight.IndexSelect(0, idx.Flatten()).Reshape(shape);
}

void Embedding::Params(const std::string& prefix, NamedParams& out) {
  out.push_back({prefix + "weight", &weight});
}

LayerNorm::LayerNorm(int64_t dim, double eps)
    : weight(Param(Tensor::Ones({dim}))), bias(Param(Tensor::Zeros({dim}))), eps(eps) {}

// (halves compute in f32, statistics and all, and give their dtype back)
Tensor LayerNorm::Forward(const Tensor& x) const {
  const Tensor xf = IsHalf(x.dtype()) ? x.Float() : x;
  Tensor centered = xf - xf.Mean({-1}, true);
  Tensor var = centered.Square().Mean({-1}, true);
  Tensor y = centered * (var + eps).Rsqrt() * weight + bias;
  return IsHalf(x.dtype()) ? y.Cast(x.dtype()) : y;
}

void LayerNorm::Params(const std::string& prefix, NamedParams& out) {
  out.push_back({prefix + "weight", &weight});
  out.push_back({prefix + "bias", &bias});
}

Tensor Dropout::Forward(const Tensor& x) const {
  if (!training_ || p == 0) return x;
  Tensor keep = Tensor::Rand(x.shape(), DType::kF32, x.device()).Ge(Tensor::Scalar(p));
  return keep.Where(x * (1.0 / (1.0 - p)), x * 0.0);
}

CausalSelfAttention::CausalSelfAttention(const GptConfig& c)
    : c_attn(c.dim, 3 * c.dim),
      c_proj(c.dim, c.dim, true, 0.02 / std::sqrt(2.0 * c.layers)),
      attn_dropout(c.dropout),
      resid_dropout(c.dropout),
      heads(c.heads) {}

Tensor CausalSelfAttention::Forward(const Tensor& x, Tensor* k_cache, Tensor* v_cache,
                                    const SymInt& pos) const {
  SymInt B = x.shape(0), T = x.shape(1);
  // C: this rank's width of q, k and v (its heads)
  const int64_t D = x.shape(2).value() / (heads * tp.size), C = heads * D;
  Tensor qkv = c_attn.Forward(EnterTensorParallel(tp, x));  // (B, T, 3C)
  auto split = [&](int64_t k) {
    return qkv.Shrink({{0, B}, {0, T}, {k * C, (k + 1) * C}})
        .Reshape({B, T, heads, D})
        .Transpose(1, 2);  // (B, H, T, D)
  };
  Tensor q = split(0), k = split(1), v = split(2);
  if (k_cache) {  // this step's keys and values into the caches, then all of them read back
    k_cache->Slice(2, pos, pos + T).Assign(k);
    v_cache->Slice(2, pos, pos + T).Assign(v);
    k = k_cache->Slice(2, 0, pos + T);
    v = v_cache->Slice(2, 0, pos + T);
  }
  // query i is at position pos + i; key j at j: it is in the future when pos + i < j
  SymInt S = k.shape(2);
  Tensor at = Tensor::Arange(0, static_cast<double>(S.max()), 1, x.device());
  Tensor future = at.Slice(0, pos, pos + T).Unsqueeze(1).Lt(at.Slice(0, 0, S));
  Tensor att = q.Matmul(k.Transpose()) * (1.0 / std::sqrt(static_cast<double>(D)));
  att = future.Where(-INFINITY, att).Softmax(-1);
  Tensor y = attn_dropout.Forward(att).Matmul(v).Transpose(1, 2).Reshape({B, T, C});
  return resid_dropout.Forward(RowParallel(tp, c_proj, y));
}

void CausalSelfAttention::Params(const std::string& prefix, NamedParams& out) {
  c_attn.Params(prefix + "c_attn.", out);
  c_proj.Params(prefix + "c_proj.", out);
}

void CausalSelfAttention::Train(bool on) {
  training_ = on;
  attn_dropout.Train(on);
  resid_dropout.Train(on);
}

Mlp::Mlp(const GptConfig& c)
    : c_fc(c.dim, 4 * c.dim),
      c_proj(4 * c.dim, c.dim, true, 0.02 / std::sqrt(2.0 * c.layers)),
      dropout(c.dropout) {}

Tensor Mlp::Forward(const Tensor& x) const {
  return dropout.Forward(RowParallel(tp, c_proj, c_fc.Forward(EnterTensorParallel(tp, x)).Gelu()));
}

void Mlp::Params(const std::string& prefix, NamedParams& out) {
  c_fc.Params(prefix + "c_fc.", out);
  c_proj.Params(prefix + "c_proj.", out);
}

void Mlp::Train(bool on) {
  training_ = on;
  dropout.Train(on);
}

Block::Block(const GptConfig& c) : ln_1(c.dim), attn(c), ln_2(c.dim), mlp(c) {}

Tensor Block::Forward(const Tensor& x, Tensor* k_cache, Tensor* v_cache,
                     const SymInt& pos) const {
  Tensor y = x + attn.Forward(ln_1.Forward(x), k_cache, v_cache, pos);
  return y + mlp.Forward(ln_2.Forward(y));
}

void Block::Params(const std::string& prefix, NamedParams& out) {
  ln_1.Params(prefix + "ln_1.", out);
  attn.Params(prefix + "attn.", out);
  ln_2.Params(prefix + "ln_2.", out);
  mlp.Params(prefix + "mlp.", out);
}

void Block::Train(bool on) {
  training_ = on;
  attn.Train(on);
  mlp.Train(on);
}

namespace {

// `c`, if its sizes make a model: checked before any member is built from them.
const GptConfig& Checked(const GptConfig& c) {
  if (c.vocab < 1 || c.context < 1 || c.dim < 1 || c.heads < 1 || c.layers < 0 ||
      !(c.dropout >= 0 && c.dropout < 1))
    ThrowInvalid(absl::StrCat("gpt: vocab ", c.vocab, ", context ", c.context, ", dim ", c.dim,
                              ", heads ", c.heads, ", layers ", c.layers, ", dropout ", c.dropout,
                              "; expected sizes >= 1 (layers >= 0) and dropout in [0, 1)"));
  if (c.dim % c.heads)
    ThrowInvalid(absl::StrCat("gpt: dim ", c.dim, " is not a multiple of heads ", c.heads));
  return c;
}

}  // namespace

Gpt::Gpt(const GptConfig& c)
    : config(Checked(c)),
      wte(c.vocab, c.dim),
      wpe(c.context, c.dim),
      ln_f(c.dim),
      lm_head(c.tie_embeddings ? Tensor() : Param(Tensor::Randn({c.vocab, c.dim}) * 0.02)) {
  for (int64_t l = 0; l < c.layers; ++l) h.push_back(std::make_unique<Block>(c));
}

Tensor Gpt::Forward(const Tensor& idx, KvCache* cache, std::vector<Tensor>* crossings) const {
  if (idx.ndim() != 2 || idx.shape(1).value() > config.context)
    ThrowInvalid(absl::StrCat("gpt: token indices of shape ", ShapeString(idx.shape()),
                              "; expected (batch, T) with T <= ", config.context));
  SymInt T = idx.shape(1);
  SymInt pos = 0;  // (the first position a VAR only past 0: a prefill plan does not need it)
  if (cache) {
    if (cache->k_.size() != h.size() || cache->capacity_ != config.context ||
        idx.shape(0) != cache->batch_)
      ThrowInvalid(absl::StrCat("gpt: a cache for ", cache->k_.size(), " layers, context ",
                                cache->capacity_, ", batch ", cache->batch_, " with a model of ",
                                h.size(), " layers, context ", config.context,
                                " and token indices of shape ", ShapeString(idx.shape())));
    if (cache->pos_ + T.value() > cache->capacity_)
      ThrowInvalid(absl::StrCat("gpt: positions [", cache->pos_, ", ", cache->pos_ + T.value(),
                                ") past the end of a cache of ", cache->capacity_,
                                " positions; expected pos + T <= ", cache->capacity_,
                                " (Reset it, or start again from the last tokens)"));
    if (cache->pos_ > 0) pos = SymInt::Variable("pos", 1, config.context - 1, cache->pos_);
  }
  auto to = [&](const Tensor& a, Device* d) {
    if (a.device() == d) return a;
    Tensor moved = a.To(d);
    if (crossings) crossings->push_back(moved);
    return moved;
  };
  Tensor x = wte.Forward(idx.To(wte.weight.device())) +
             wpe.weight.Slice(0, pos, pos + T).To(wte.weight.device());
  for (size_t l = 0; l < h.size(); ++l) {
    const Block& b = *h[l];
    x = b.Forward(to(x, b.ln_1.weight.device()), cache ? &cache->k_[l] : nullptr,
                  cache ? &cache->v_[l] : nullptr, pos);
  }
  if (cache) cache->pos_ += T.value();
  x = ln_f.Forward(to(x, ln_f.weight.device()));
  return to(x, head().device()).Matmul(head().Transpose());
}

void KvCache::Rewind(int64_t pos) {
  if (pos < 0 || pos > pos_)
    ThrowInvalid(absl::StrCat("kv cache: rewind to position ", pos, " of a cache holding ", pos_,
                              "; expected 0 <= pos <= ", pos_));
  pos_ = pos;
}

void KvCache::Advance(int64_t n) {
  if (n < 0 || pos_ + n > capacity_)
    ThrowInvalid(absl::StrCat("kv cache: advance by ", n, " from position ", pos_,
                              "; expected 0 <= n <= ", capacity_ - pos_));
  pos_ += n;
}

KvCache::KvCache(const Gpt& model, int64_t batch)
    : capacity_(model.config.context), batch_(batch) {
  if (batch < 1) ThrowInvalid(absl::StrCat("kv cache: batch ", batch, "; expected >= 1"));
  const GptConfig& c = model.config;
  for (const auto& b : model.h) {
    Device* d = b->ln_1.weight.device();
    const int64_t heads = b->attn.heads, n = batch * heads * c.context * (c.dim / c.heads);
    // (in the dtype of the keys and values: bf16 or f16 under an Autocast)
    const DType t = Autocast::Current().value_or(DType::kF32);
    for (auto* cache : {&k_, &v_})  // (uploaded: no plan to build)
      cache->push_back(Tensor::FromVector(std::vector<float>(n, 0.0f),
                                          {batch, heads, c.context, c.dim / c.heads}, t, d));
  }
}

void Gpt::Split(const std::vector<DeviceRef>& devices) {
  if (devices.empty()) ThrowInvalid("gpt split: no devices");
  const size_t n = devices.size(), layers = h.size();
  wte.To(devices.front());
  wpe.To(devices.front());
  for (size_t l = 0; l < layers; ++l) h[l]->To(devices[l * n / std::max<size_t>(layers, 1)]);
  ln_f.To(devices.back());
  if (!config.tie_embeddings) MoveParameter(&lm_head, devices.back().get());  // (else wte's)
}

void Gpt::ShardTensorParallel(const TensorParallel& tp, const NamedParams& state) {
  if (tp.size < 1 || tp.rank < 0 || tp.rank >= tp.size || config.heads % tp.size)
    ThrowInvalid(absl::StrCat("gpt: tensor parallelism of rank ", tp.rank, " of ", tp.size,
                              " ranks with ", config.heads,
                              " heads; expected a rank in [0, size) and a size dividing heads"));
  if (tp.size == 1) return;
  for (const auto& b : h) {
    if (b->attn.tp.size != 1)
      ThrowInvalid("gpt: the model is split for tensor parallelism already");
    b->attn.heads = config.heads / tp.size;
    b->attn.tp = b->mlp.tp = tp;
  }
  NamedParams all = NamedParameters();
  all.insert(all.end(), state.begin(), state.end());
  for (auto& [name, t] : all) {
    std::optional<TensorParallelSplit> split = TensorParallelSplitOf(config, name);
    if (!split) continue;
    const bool leaf = t->requires_grad();
    Tensor part = TakeShard(t->Detach(), *split, tp.rank, tp.size);
    if (leaf) part.RequiresGrad();
    *t = part;
  }
}

void Gpt::Params(const std::string& prefix, NamedParams& out) {
  wte.Params(prefix + "wte.", out);
  wpe.Params(prefix + "wpe.", out);
  for (size_t l = 0; l < h.size(); ++l) h[l]->Params(absl::StrCat(prefix, "h.", l, "."), out);
  ln_f.Params(prefix + "ln_f.", out);
  if (!config.tie_embeddings) out.push_back({prefix + "lm_head.weight", &lm_head});
}

void Gpt::Train(bool on) {
  training_ = on;
  for (auto& b : h) b->Train(on);
}

}  // namespace uopc
