#include "frontend/generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"

#include "frontend/captured_step.h"
#include "frontend/realize.h"

namespace uopc {
namespace {

// The logits of the last of `tokens`: a prefill of them (1, T), T a VAR.
std::vector<float> LastLogits(const Gpt& model, const std::vector<int64_t>& tokens,
                              KvCache* cache) {
  SymInt T = SymInt::Variable("T", 1, model.config.context, static_cast<int64_t>(tokens.size()));
  Tensor idx = Tensor::FromVector(tokens, {1, T}, DType::kI32, model.wte.weight.device());
  return model.Forward(idx, cache).Slice(1, T - 1, T).ToVector<float>();
}

// One token at the cache's position: its logits. The first decode step is captured; the
// next ones run its plan again with the token and the position, building no graph.
class Decoder {
 public:
  Decoder(const Gpt& model, KvCache& cache) : model_(model), cache_(cache) {}
  std::vector<float> Next(int64_t token) {
    Tensor t = Tensor::FromVector(std::vector<int64_t>{token}, {1, 1}, DType::kI32,
                                  model_.wte.weight.device());
    if (!step_) {
      std::vector<Tensor> out;
      step_ = std::make_unique<CapturedStep>(
          [&](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{model_.Forward(in[0], &cache_)};
          },
          std::vector<Tensor>{t}, &out);
      return out[0].ToVector<float>();
    }
    std::vector<Tensor> out = step_->Run({t}, {{"pos", cache_.pos()}});
    cache_.Advance(1);
    return out[0].ToVector<float>();
  }

 private:
  const Gpt& model_;
  KvCache& cache_;
  std::unique_ptr<CapturedStep> step_;
};

}  // namespace

void CheckGenerateRequest(const Gpt& model, const std::vector<int64_t>& prompt, const GenerateOptions& o) {
  if (prompt.empty()) ThrowInvalid("generate: an empty prompt; expected at least one token");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= model.config.vocab)
      ThrowInvalid(absl::StrCat("generate: prompt token ", i, " is ", prompt[i],
                                "; expected a token id in [0, ", model.config.vocab, ")"));
  if (o.max_tokens < 0 || !(o.temperature >= 0) || !std::isfinite(o.temperature) || o.top_k < 0)
    ThrowInvalid(absl::StrCat("generate: max_tokens ", o.max_tokens, ", temperature ",
                              o.temperature, ", top_k ", o.top_k,
                              "; expected max_tokens >= 0, a finite temperature >= 0, top_k >= 0"));
}

int64_t ChooseToken(std::vector<float> logits, const GenerateOptions& o, std::mt19937_64& rng) {
  if (o.temperature == 0)
    return std::max_element(logits.begin(), logits.end()) - logits.begin();
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  size_t k = o.top_k > 0 ? std::min<size_t>(o.top_k, order.size()) : order.size();
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  double top = logits[order[0]];
  std::vector<double> p(k);
  for (size_t i = 0; i < k; ++i) p[i] = std::exp((logits[order[i]] - top) / o.temperature);
  std::discrete_distribution<size_t> pick(p.begin(), p.end());
  return order[pick(rng)];
}

Generation Generate(Gpt& model, const std::vector<int64_t>& prompt, const GenerateOptions& o) {
  CheckGenerateRequest(model, prompt, o);
  const bool was_training = model.training();
  model.Train(false);
  const size_t plans_before = Runtime::Get().plans().size();
  const size_t context = static_cast<size_t>(model.config.context);
  std::mt19937_64 rng(o.seed);
  std::vector<int64_t> seq = prompt;
  std::unique_ptr<KvCache> cache;
  std::unique_ptr<Decoder> decoder;
  if (o.use_cache) {
    cache = std::make_unique<KvCache>(model);
    decoder = std::make_unique<Decoder>(model, *cache);
  }
  size_t start = 0;  // the sequence position of the cache's position 0
  Generation g;
  try {
    while (static_cast<int64_t>(g.tokens.size()) < o.max_tokens) {
      std::vector<int64_t> feed;
      if (!cache || seq.size() - start > context) {  // (re)read the last `context` tokens
        start = seq.size() > context ? seq.size() - context : 0;
        feed.assign(seq.begin() + start, seq.end());
        if (cache) cache->Reset();
      } else {
        feed.assign(seq.begin() + start + cache->pos(), seq.end());
      }
      std::vector<float> logits;
      if (cache && cache->pos() > 0 && feed.size() == 1) {
        logits = decoder->Next(feed[0]);
      } else {
        g.prefills += cache != nullptr;
        logits = LastLogits(model, feed, cache.get());
      }
      if (o.on_logits) o.on_logits(logits);
      int64_t token = ChooseToken(std::move(logits), o, rng);
      seq.push_back(token);
      g.tokens.push_back(token);
      if ((o.on_token && !o.on_token(token)) || token == o.stop_token) break;
    }
  } catch (...) {
    model.Train(was_training);
    throw;
  }
  model.Train(was_training);
  g.plans_built = static_cast<int64_t>(Runtime::Get().plans().size() - plans_before);
  return g;
}

}  // namespace uopc
