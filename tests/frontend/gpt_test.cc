// The GPT against a naive reference written plainly here (loops, doubles, no uopc):
// logits and every gradient; a whole block against f64 finite differences; training
// determinism, plan reuse and flat memory.
#include <cmath>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "frontend/autograd.h"
#include "frontend/nn.h"
#include "frontend/optim.h"
#include "frontend/realize.h"
#include "tests/testing/error_of.h"

namespace uopc {
namespace {

using Vec = std::vector<double>;

// ---- the naive reference ----
struct NaiveGpt {
  GptConfig c;
  std::map<std::string, Vec> p;  // by GPT-2 name

  const Vec& P(const std::string& n) const { return p.at(n); }

  // y (n x out) = x (n x in) @ W (in x out) + b
  static Vec Linear(const Vec& x, int64_t n, int64_t in, int64_t out, const Vec& w, const Vec* b) {
    Vec y(n * out, 0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        double s = b ? (*b)[o] : 0;
        for (int64_t k = 0; k < in; ++k) s += x[i * in + k] * w[k * out + o];
        y[i * out + o] = s;
      }
    return y;
  }
  static Vec Norm(const Vec& x, int64_t n, int64_t d, const Vec& w, const Vec& b) {
    Vec y(x.size());
    for (int64_t i = 0; i < n; ++i) {
      double m = 0, v = 0;
      for (int64_t k = 0; k < d; ++k) m += x[i * d + k] / d;
      for (int64_t k = 0; k < d; ++k) v += (x[i * d + k] - m) * (x[i * d + k] - m) / d;
      for (int64_t k = 0; k < d; ++k)
        y[i * d + k] = (x[i * d + k] - m) / std::sqrt(v + 1e-5) * w[k] + b[k];
    }
    return y;
  }

  // mean cross entropy of the next-token predictions of `idx` (B x T) against `y`
  double Loss(const std::vector<int32_t>& idx, const std::vector<int32_t>& y, int64_t B, int64_t T,
              Vec* logits_out = nullptr) const {
    const int64_t C = c.dim, H = c.heads, D = C / H, V = c.vocab, N = B * T;
    Vec x(N * C);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < C; ++k)
        x[n * C + k] = P("wte.weight")[idx[n] * C + k] + P("wpe.weight")[(n % T) * C + k];
    for (int64_t l = 0; l < c.layers; ++l) {
      std::string h = "h." + std::to_string(l) + ".";
      Vec a = Norm(x, N, C, P(h + "ln_1.weight"), P(h + "ln_1.bias"));
      Vec qkv = Linear(a, N, C, 3 * C, P(h + "attn.c_attn.weight"), &P(h + "attn.c_attn.bias"));
      Vec att(N * C, 0);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t hd = 0; hd < H; ++hd)
          for (int64_t t = 0; t < T; ++t) {
            Vec s(t + 1);
            double m = -INFINITY, z = 0;
            for (int64_t u = 0; u <= t; ++u) {
              double dot = 0;
              for (int64_t k = 0; k < D; ++k)
                dot += qkv[(b * T + t) * 3 * C + hd * D + k] *
                       qkv[(b * T + u) * 3 * C + C + hd * D + k];
              s[u] = dot / std::sqrt(static_cast<double>(D));
              m = std::max(m, s[u]);
            }
            for (double& e : s) z += (e = std::exp(e - m));
            for (int64_t k = 0; k < D; ++k) {
              double o = 0;
              for (int64_t u = 0; u <= t; ++u)
                o += s[u] / z * qkv[(b * T + u) * 3 * C + 2 * C + hd * D + k];
              att[(b * T + t) * C + hd * D + k] = o;
            }
          }
      Vec proj = Linear(att, N, C, C, P(h + "attn.c_proj.weight"), &P(h + "attn.c_proj.bias"));
      for (int64_t i = 0; i < N * C; ++i) x[i] += proj[i];
      Vec f = Linear(Norm(x, N, C, P(h + "ln_2.weight"), P(h + "ln_2.bias")), N, C, 4 * C,
                     P(h + "mlp.c_fc.weight"), &P(h + "mlp.c_fc.bias"));
      for (double& v : f)
        v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      Vec o = Linear(f, N, 4 * C, C, P(h + "mlp.c_proj.weight"), &P(h + "mlp.c_proj.bias"));
      for (int64_t i = 0; i < N * C; ++i) x[i] += o[i];
    }
    Vec hf = Norm(x, N, C, P("ln_f.weight"), P("ln_f.bias"));
    Vec logits(N * V, 0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t v = 0; v < V; ++v)
        for (int64_t k = 0; k < C; ++k)
          logits[n * V + v] += hf[n * C + k] * P("lm_head.weight")[v * C + k];
    if (logits_out) *logits_out = logits;
    double loss = 0;
    for (int64_t n = 0; n < N; ++n) {
      double m = -INFINITY, z = 0;
      for (int64_t v = 0; v < V; ++v) m = std::max(m, logits[n * V + v]);
      for (int64_t v = 0; v < V; ++v) z += std::exp(logits[n * V + v] - m);
      loss += -(logits[n * V + y[n]] - m - std::log(z)) / N;
    }
    return loss;
  }
};

NaiveGpt Mirror(Gpt& model) {
  NaiveGpt n{model.config, {}};
  for (auto& [name, t] : model.NamedParameters()) n.p[name] = t->ToVector<double>();
  return n;
}

const GptConfig kSmall{7, 5, 8, 2, 2, 0.0};
const std::vector<int32_t> kIdx = {1, 5, 2, 6, 0, 3, 3, 4, 1, 2},
                           kY = {5, 2, 6, 0, 3, 3, 4, 1, 2, 6};

TEST(Gpt, ParametersHaveGpt2NamesAndLayouts) {
  Tensor::ManualSeed(3);
  Gpt model(kSmall);
  std::vector<std::pair<std::string, TensorShape>> want = {{"wte.weight", {7, 8}},
                                                           {"wpe.weight", {5, 8}},
                                                           {"h.0.ln_1.weight", {8}},
                                                           {"h.0.ln_1.bias", {8}},
                                                           {"h.0.attn.c_attn.weight", {8, 24}},
                                                           {"h.0.attn.c_attn.bias", {24}},
                                                           {"h.0.attn.c_proj.weight", {8, 8}},
                                                           {"h.0.attn.c_proj.bias", {8}},
                                                           {"h.0.ln_2.weight", {8}},
                                                           {"h.0.ln_2.bias", {8}},
                                                           {"h.0.mlp.c_fc.weight", {8, 32}},
                                                           {"h.0.mlp.c_fc.bias", {32}},
                                                           {"h.0.mlp.c_proj.weight", {32, 8}},
                                                           {"h.0.mlp.c_proj.bias", {8}}};
  NamedParams got = model.NamedParameters();
  ASSERT_EQ(got.size(), 2 + 12 * 2 + 2 + 1u);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first);
    EXPECT_EQ(got[i].second->shape(), want[i].second) << want[i].first;
  }
  EXPECT_EQ(got[got.size() - 3].first, "ln_f.weight");
  EXPECT_EQ(got.back().first, "lm_head.weight");
  EXPECT_EQ(got.back().second->shape(), (TensorShape{7, 8}));
}

// Tensor parallelism keeps this rank's columns of c_attn (of q, of k and of v) and c_fc, its
// rows of the c_projs, and the rest whole; the optimizer's state named after a parameter
// is split as it is.
TEST(Gpt, TensorParallelKeepsThisRanksPartOfEachBlock) {
  Tensor::ManualSeed(3);
  Gpt model(kSmall);  // dim 8, heads 2
  std::vector<float> c_attn = model.h[0]->attn.c_attn.weight.ToVector<float>();
  Tensor moment = Tensor::Ones({32, 8}).Realize();
  model.ShardTensorParallel({0, 1, 2}, {{"optim.m.h.0.mlp.c_proj.weight", &moment}});
  std::map<std::string, TensorShape> want = {{"h.0.attn.c_attn.weight", {8, 12}},
                                             {"h.0.attn.c_attn.bias", {12}},
                                             {"h.0.attn.c_proj.weight", {4, 8}},
                                             {"h.0.attn.c_proj.bias", {8}},
                                             {"h.0.mlp.c_fc.weight", {8, 16}},
                                             {"h.0.mlp.c_fc.bias", {16}},
                                             {"h.0.mlp.c_proj.weight", {16, 8}},
                                             {"h.0.ln_1.weight", {8}},
                                             {"wte.weight", {7, 8}}};
  for (auto& [name, t] : model.NamedParameters()) {
    if (want.contains(name)) {
      EXPECT_EQ(t->shape(), want[name]) << name;
    }
  }
  EXPECT_EQ(moment.shape(), (TensorShape{16, 8}));
  EXPECT_EQ(model.h[0]->attn.heads, 1);
  std::vector<float> part = model.h[0]->attn.c_attn.weight.ToVector<float>();
  for (int r = 0; r < 8; ++r)
    for (int k = 0; k < 3; ++k)  // q, k, v: columns [k * 8 + 4, k * 8 + 8) of the whole
      for (int c = 0; c < 4; ++c)
        EXPECT_EQ(part[r * 12 + k * 4 + c], c_attn[r * 24 + k * 8 + 4 + c]) << r << " " << k;
  EXPECT_TRUE(model.h[0]->attn.c_attn.weight.requires_grad());
  EXPECT_EQ(testing::ErrorOf([&] {
              model.ShardTensorParallel({0, 0, 2});
            }),
            "gpt: the model is split for tensor parallelism already");
  Gpt other(kSmall);
  EXPECT_EQ(testing::ErrorOf([&] {
              other.ShardTensorParallel({0, 0, 3});
            }),
            "gpt: tensor parallelism of rank 0 of 3 ranks with 2 heads; expected a rank in [0, "
            "size) and a size dividing heads");
}

TEST(Gpt, LogitsAndEveryGradientMatchTheNaiveReference) {
  Tensor::ManualSeed(11);
  Gpt model(kSmall);
  for (auto& [n, t] :
       model.NamedParameters())  // larger than the 0.02 init, so that everything matters
    t->Assign((Tensor::Randn(t->shape()) * 0.3).Realize());
  for (auto& [n, t] : model.NamedParameters()) t->RequiresGrad();
  NaiveGpt ref = Mirror(model);
  Tensor logits = model.Forward(Tensor::FromVector(kIdx, {2, 5}));
  Tensor loss = logits.Reshape({10, 7}).CrossEntropy(Tensor::FromVector(kY, {10}));
  Vec want_logits;
  double want_loss = ref.Loss(kIdx, kY, 2, 5, &want_logits);
  std::vector<double> got_logits = logits.ToVector<double>();
  for (size_t i = 0; i < got_logits.size(); ++i)
    EXPECT_NEAR(got_logits[i], want_logits[i], 1e-4) << "logit " << i;
  EXPECT_NEAR(loss.Item<double>(), want_loss, 1e-4);
  loss.Backward();
  for (auto& [name, t] : model.NamedParameters()) {
    std::vector<double> g = t->grad().ToVector<double>();
    Vec& v = ref.p[name];
    for (size_t k = 0; k < v.size(); ++k) {
      double keep = v[k], h = 1e-5;
      v[k] = keep + h;
      double up = ref.Loss(kIdx, kY, 2, 5);
      v[k] = keep - h;
      double down = ref.Loss(kIdx, kY, 2, 5);
      v[k] = keep;
      EXPECT_NEAR(g[k], (up - down) / (2 * h), 1e-4) << name << "[" << k << "]";
    }
  }
}

TEST(Gpt, ABlockMatchesFiniteDifferencesInF64) {
  Tensor::ManualSeed(5);
  GptConfig c{5, 4, 6, 2, 1, 0.0};
  Block block(c);
  std::mt19937 rng(2);
  std::normal_distribution<double> n(0, 0.5);
  NamedParams params;
  block.Params("", params);
  std::vector<Vec> values;
  for (auto& [name, t] : params) {
    Vec v(t->numel().value());
    for (double& x : v) x = n(rng);
    values.push_back(v);
  }
  Vec xv(2 * 4 * 6), wv(2 * 4 * 6);
  for (double& x : xv) x = n(rng);
  for (double& x : wv) x = n(rng);
  auto loss_of = [&](const std::vector<Vec>& vals) {
    for (size_t i = 0; i < params.size(); ++i)
      *params[i].second =
          Tensor::FromVector(vals[i], params[i].second->shape(), DType::kF64).RequiresGrad();
    return (block.Forward(Tensor::FromVector(xv, {2, 4, 6}, DType::kF64)) *
            Tensor::FromVector(wv, {2, 4, 6}, DType::kF64))
        .Sum();
  };
  Tensor loss = loss_of(values);
  std::vector<Tensor> wrt;
  for (auto& [name, t] : params) wrt.push_back(*t);
  std::vector<Tensor> grads = Gradients(loss, wrt);
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<double> g = grads[i].ToVector<double>();
    for (size_t k = 0; k < values[i].size(); k += 3) {  // every third element: enough, and quick
      auto v = values;
      const double h = 1e-6;
      v[i][k] += h;
      double up = loss_of(v).Item<double>();
      v[i][k] -= 2 * h;
      double down = loss_of(v).Item<double>();
      double fd = (up - down) / (2 * h);
      EXPECT_NEAR(g[k], fd, 1e-6 * std::max(1.0, std::abs(fd)))
          << params[i].first << "[" << k << "]";
    }
  }
}

// A few training steps of a small model; returns the losses.
std::vector<float> Train(int steps, uint64_t seed, size_t* plans_after_first = nullptr) {
  Tensor::ManualSeed(seed);
  Gpt model(kSmall);
  AdamW opt(model.Parameters(), 1e-2);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    Tensor loss = model.Forward(Tensor::FromVector(kIdx, {2, 5}))
                      .Reshape({10, 7})
                      .CrossEntropy(Tensor::FromVector(kY, {10}));
    loss.Backward();
    ClipGradNorm(model.Parameters(), 1.0);
    opt.set_lr(CosineLr(s, 2, steps, 1e-2, 1e-3));
    opt.Step({&loss});
    losses.push_back(loss.Item<float>());
    if (s == 0 && plans_after_first) *plans_after_first = Runtime::Get().plans().size();
  }
  return losses;
}

TEST(Training, TheSameSeedGivesTheSameLossesBitForBit) {
  std::vector<float> a = Train(6, 42), b = Train(6, 42), c = Train(6, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_LT(a.back(), a.front());
}

TEST(Training, NoNewPlansAfterTheFirstStep) {
  size_t after_first = 0;
  std::vector<float> losses = Train(20, 7, &after_first);
  EXPECT_EQ(Runtime::Get().plans().size(), after_first);
  EXPECT_LT(losses.back(), losses.front());
}

// Steps on batches of varying length T (a VAR, or each length a number); returns the losses
// and (symbolic) the plans built after the first step.
std::vector<float> TrainVaryingLengths(bool symbolic, size_t* new_plans) {
  const GptConfig c{7, 8, 8, 2, 2, 0.0};
  Tensor::ManualSeed(5);
  Gpt model(c);
  AdamW opt(model.Parameters(), 1e-2);
  std::mt19937 rng(11);
  std::vector<float> losses;
  size_t after_first = 0;
  for (int64_t len : {5, 3, 8, 2, 6, 8, 1, 4}) {
    std::vector<int32_t> tokens(2 * (len + 1));
    for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % c.vocab);
    std::vector<int32_t> x, y;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < len; ++i) {
        x.push_back(tokens[b * (len + 1) + i]);
        y.push_back(tokens[b * (len + 1) + i + 1]);
      }
    SymInt T = symbolic ? SymInt::Variable("T", 1, c.context, len) : SymInt(len);
    Tensor loss = model.Forward(Tensor::FromVector(x, {2, T}))
                      .Reshape({2 * T, c.vocab})
                      .CrossEntropy(Tensor::FromVector(y, {2 * T}));
    loss.Backward();
    ClipGradNorm(model.Parameters(), 1.0);
    opt.Step({&loss});
    losses.push_back(loss.Item<float>());
    if (losses.size() == 1) after_first = Runtime::Get().plans().size();
  }
  *new_plans = Runtime::Get().plans().size() - after_first;
  return losses;
}

TEST(Training, ASymbolicLengthGivesTheLossesOfFixedLengthsWithOnePlan) {
  size_t fixed_plans = 0, symbolic_plans = 0;
  std::vector<float> fixed = TrainVaryingLengths(false, &fixed_plans);
  std::vector<float> symbolic = TrainVaryingLengths(true, &symbolic_plans);
  ASSERT_EQ(fixed.size(), symbolic.size());
  for (size_t i = 0; i < fixed.size(); ++i)
    EXPECT_NEAR(symbolic[i], fixed[i], 1e-5 * std::abs(fixed[i])) << "step " << i;
  EXPECT_EQ(symbolic_plans, 0u);  // every length after the first: no new plan
  EXPECT_GT(fixed_plans, 0u);
}

TEST(Training, MemoryStaysFlat) {
  Tensor::ManualSeed(9);
  GptConfig tiny{5, 4, 8, 2, 1, 0.0};
  Gpt model(tiny);
  AdamW opt(model.Parameters(), 1e-3);
  std::vector<int32_t> idx = {1, 2, 3, 4, 0, 1, 2, 3}, y = {2, 3, 4, 0, 1, 2, 3, 4};
  size_t nodes = 0;
  uint64_t bytes = 0;
  Device* dev = DefaultDevice();
  for (int s = 1; s <= 1000; ++s) {
    Tensor loss = model.Forward(Tensor::FromVector(idx, {2, 4}))
                      .Reshape({8, 5})
                      .CrossEntropy(Tensor::FromVector(y, {8}));
    loss.Backward();
    opt.Step({&loss});
    if (s == 100) {  // measured at the same point of the loop, with one step's loss alive
      nodes = UOp::LiveCount();
      bytes = dev->allocator().stats().live_bytes;
    }
    if (s == 1000) {
      EXPECT_EQ(UOp::LiveCount(), nodes);
      EXPECT_EQ(dev->allocator().stats().live_bytes, bytes);
    }
  }
}

TEST(Autograd, ADataDependentIndexIsRefused) {
  Tensor w = Tensor::FromVector<float>({1, 2, 3}, {3}).RequiresGrad();
  UOp gathered = w.uop().Index(1).Load();  // w[1], read through a computed index
  Tensor g(gathered, {}, DType::kF32, DefaultDevice(), {w.data()});
  try {
    (g * w.Sum()).Backward();
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "backward: the value depends on a data-dependent index (a gather); autodiff "
                 "cannot differentiate "
                 "through it (use Gather, IndexSelect or ScatterAdd)");
  }
}

}  // namespace
}  // namespace uopc
