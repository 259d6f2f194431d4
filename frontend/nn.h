// nn: the layers a GPT is made of, with the GPT-2 parameter names and layouts so that
// checkpoints written by other tools load: Linear keeps its weight as (in, out), as
// GPT-2's Conv1D does; a model's parameters are listed by dotted name ("h.0.attn.c_attn.weight").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/tensor.h"

namespace uopc {

/// Parameters by dotted name, in a fixed order.
using NamedParams = std::vector<std::pair<std::string, Tensor*>>;

class Module {
 public:
  virtual ~Module() = default;
  /// Appends this module's parameters, their names prefixed by `prefix` ("h.0." ...).
  virtual void Params(const std::string& prefix, NamedParams& out) = 0;
  NamedParams NamedParameters();
  std::vector<Tensor*> Parameters();
  /// Moves every parameter to `device` (realized there, still a leaf that requires grad;
  /// gradients are dropped). Create optimizers after moving, as in PyTorch. To a device of
  /// another rank of the job ("rank1/CPU:0"), nothing moves: every rank made the same
  /// module, the rank that owns the device keeps its parameters, and this one holds none.
  void To(DeviceRef device);
  /// The device of its first parameter (null without parameters).
  Device* device();
  /// Training mode (dropout on) or evaluation mode.
  virtual void Train(bool on) { training_ = on; }
  bool training() const { return training_; }

 protected:
  bool training_ = true;
};

/// y = x @ weight + bias, weight (in, out).
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias = true, double init_std = 0.02);
  Tensor Forward(const Tensor& x) const;
  void Params(const std::string& prefix, NamedParams& out) override;
  Tensor weight, bias;
};

/// Rows of `weight` (num, dim) picked by integer indices (IndexSelect: one row read per
/// index; the gradient, a scatter-add into the rows).
class Embedding : public Module {
 public:
  Embedding(int64_t num, int64_t dim, double init_std = 0.02);
  Tensor Forward(const Tensor& idx) const;
  void Params(const std::string& prefix, NamedParams& out) override;
  Tensor weight;
};

/// (x - mean) / sqrt(var + eps) * weight + bias over the last axis.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5);
  Tensor Forward(const Tensor& x) const;
  void Params(const std::string& prefix, NamedParams& out) override;
  Tensor weight, bias;
  double eps;
};

/// In training, zeroes each element with probability p and scales the rest by 1/(1-p).
class Dropout : public Module {
 public:
  explicit Dropout(double p) : p(p) {}
  Tensor Forward(const Tensor& x) const;
  void Params(const std::string&, NamedParams&) override {}
  double p;
};

struct GptConfig {
  int64_t vocab = 65, context = 64, dim = 128, heads = 4, layers = 4;
  double dropout = 0.0;
  /// GPT-2's convention: the output projection is the token embedding (one tensor: the
  /// optimizer, gradient clipping and checkpoints see it once, as "wte.weight").
  bool tie_embeddings = false;
};

/// Megatron's tensor parallelism: the `size` ranks of a process group (`group`: its number
/// in this process, runtime/collective_group.h) share every block. Each holds its part of
/// the heads (c_attn's columns, c_proj's rows) and of the MLP's hidden units (c_fc's
/// columns, c_proj's rows); a block's input enters through f (identity; gradient summed over
/// the ranks) and each half's output leaves through g (summed; gradient as it is): one
/// all-reduce per half in each direction. The rest of the model is replicated.
struct TensorParallel {
  int group = 0, rank = 0, size = 1;
};

/// How tensor parallelism splits a parameter of `size` ranks: viewed as `view`, rank r keeps
/// [r, r + 1) * view[axis] / size along `axis` (c_attn's columns of q, of k and of v), which
/// divides dim `dim` of the parameter's shape by `size`.
struct TensorParallelSplit {
  std::vector<int64_t> view;
  int axis = 0, dim = 0;
};
/// The split of the GPT parameter called `name` (or of state named after it: a name that
/// ends with "h.N.attn.c_attn.weight" and so on); none for a replicated one.
std::optional<TensorParallelSplit> TensorParallelSplitOf(const GptConfig& c,
                                                         const std::string& name);
/// Rank `rank`'s part of `full` (realized).
Tensor TakeShard(const Tensor& full, const TensorParallelSplit& split, int rank, int size);

/// Multi-head causal self-attention: c_attn (dim, 3 dim) then c_proj (dim, dim).
class CausalSelfAttention : public Module {
 public:
  explicit CausalSelfAttention(const GptConfig& c);
  /// (B, T, C) -> (B, T, C). With caches (B, heads, context, C/heads): x holds positions
  /// [pos, pos + T); their keys and values are written into the caches (in place, lazily),
  /// and the queries attend to positions [0, pos + T) of the caches.
  Tensor Forward(const Tensor& x, Tensor* k_cache = nullptr, Tensor* v_cache = nullptr,
                 const SymInt& pos = 0) const;
  void Params(const std::string& prefix, NamedParams& out) override;
  void Train(bool on) override;
  Linear c_attn, c_proj;
  Dropout attn_dropout, resid_dropout;
  int64_t heads;  // this rank's (all of them without tensor parallelism)
  TensorParallel tp;
};

/// c_fc (dim, 4 dim), GELU, c_proj (4 dim, dim).
class Mlp : public Module {
 public:
  explicit Mlp(const GptConfig& c);
  Tensor Forward(const Tensor& x) const;
  void Params(const std::string& prefix, NamedParams& out) override;
  void Train(bool on) override;
  Linear c_fc, c_proj;
  Dropout dropout;
  TensorParallel tp;
};

/// x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class Block : public Module {
 public:
  explicit Block(const GptConfig& c);
  Tensor Forward(const Tensor& x, Tensor* k_cache = nullptr, Tensor* v_cache = nullptr,
                 const SymInt& pos = 0) const;
  void Params(const std::string& prefix, NamedParams& out) override;
  void Train(bool on) override;
  LayerNorm ln_1;
  CausalSelfAttention attn;
  LayerNorm ln_2;
  Mlp mlp;
};

class KvCache;

/// GPT-2: wte, wpe, blocks h.N, ln_f, and lm_head (vocab, dim) as GPT-2 stores it (none when
/// tied: wte.weight is the output projection too). Its parts
/// may live on different devices (a pipeline: `model.h[2]->To("CPU:1")`): Forward moves the
/// activations to each part's device as it goes, and the logits are on lm_head's.
class Gpt : public Module {
 public:
  explicit Gpt(const GptConfig& c);
  /// Token indices (B, T), T <= context (T may be symbolic: one plan for every length), to
  /// logits (B, T, vocab), on lm_head's device. With a cache: idx are the tokens at
  /// positions [cache->pos(), cache->pos() + T), whose keys and values are written into
  /// the cache (the cache then holds pos() + T positions); attention reads the cache, so a
  /// token costs what its position costs. The position is a VAR, so decoding one token at
  /// a time is one plan for every position. `crossings`, if given, gets each activation
  /// that moved to the next part's device on the way (a pipeline's stage inputs: what a
  /// schedule realizes with the loss, so that the backward pass reads them, not recomputes).
  Tensor Forward(const Tensor& idx, KvCache* cache = nullptr,
                 std::vector<Tensor>* crossings = nullptr) const;
  /// Spreads the model over `devices` as a pipeline: the blocks in contiguous groups, as
  /// even as possible, the embeddings with the first group, ln_f and lm_head with the last.
  void Split(const std::vector<DeviceRef>& devices);
  /// Splits the blocks over the ranks of `tp` (TensorParallel): this rank keeps its part of
  /// each split parameter (as a new leaf: gradients are dropped), and of each tensor of
  /// `state` named after one (optimizer moments, "optim.m.h.0.attn.c_attn.weight"). Every
  /// rank must start from the same full model.
  void ShardTensorParallel(const TensorParallel& tp, const NamedParams& state = {});
  void Params(const std::string& prefix, NamedParams& out) override;
  void Train(bool on) override;
  GptConfig config;
  Embedding wte, wpe;
  std::vector<std::unique_ptr<Block>> h;
  LayerNorm ln_f;
  Tensor lm_head;  // null when tied to wte.weight
  /// The output projection: lm_head, or wte.weight when tied.
  const Tensor& head() const { return config.tie_embeddings ? wte.weight : lm_head; }
};

/// The keys and values of every layer for the positions a Gpt has seen, in buffers as long
/// as its context, (B, heads, context, dim / heads) on each block's device: what decoding
/// reads instead of recomputing the past.
class KvCache {
 public:
  explicit KvCache(const Gpt& model, int64_t batch = 1);
  /// How many positions it holds.
  int64_t pos() const { return pos_; }
  int64_t capacity() const { return capacity_; }
  int64_t batch() const { return batch_; }
  /// Forgets every position (nothing is cleared: positions past pos() are never read).
  void Reset() { pos_ = 0; }
  /// Forgets the positions from `pos` on (to decode again from there: another candidate,
  /// a draft rejected), 0 <= pos <= pos().
  void Rewind(int64_t pos);
  /// Counts `n` more positions as held: their keys and values were written by a step that
  /// did not go through Gpt::Forward (a CapturedStep of it, run again).
  void Advance(int64_t n);

 private:
  friend class Gpt;
  std::vector<Tensor> k_, v_;
  int64_t pos_ = 0, capacity_ = 0, batch_ = 0;
};

}  // namespace uopc
