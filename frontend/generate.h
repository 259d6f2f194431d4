// Generate: text from a Gpt, one token at a time. With the KV cache (the default), the
// prompt is read once (a prefill whose length is a VAR) and each new token costs what its
// position costs (a decode step whose position is a VAR): two plans serve a whole
// generation, whatever the lengths. Past the model's context, the last `context` tokens
// are what the next one is predicted from (the cache is filled again from them).
//
//   GenerateOptions o;
//   o.max_tokens = 200;
//   o.temperature = 0.8;
//   o.top_k = 40;
//   Generation g = Generate(model, {20, 43, 1}, o);
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "frontend/nn.h"

namespace uopc {

struct GenerateOptions {
  int64_t max_tokens = 100;
  double temperature = 1.0;  // 0: greedy (the most likely token)
  int64_t top_k = 0;         // sample among the k most likely tokens; 0: among all
  uint64_t seed = 0;
  int64_t stop_token = -1;   // generation stops after this token (-1: none)
  bool use_cache = true;     // false: every token recomputes its whole context
  /// Called with each new token as it comes; returning false stops the generation.
  std::function<bool(int64_t token)> on_token;
  /// Called with the logits each new token is chosen from (vocab values).
  std::function<void(const std::vector<float>& logits)> on_logits;
};

struct Generation {
  std::vector<int64_t> tokens;  // the new tokens (the prompt not included)
  int64_t plans_built = 0;      // plans built (compiled) during the generation
  int64_t prefills = 0;         // times the cache was filled from a sequence of tokens
};

/// Throws uopc::Error naming what is wrong with a request: an empty prompt, a token outside
/// the vocabulary, a negative max_tokens or top_k, a temperature that is not finite and >= 0.
void CheckGenerateRequest(const Gpt& model, const std::vector<int64_t>& prompt,
                          const GenerateOptions& options);

/// The next token from `logits` as `options` say (greedy at temperature 0, else sampled
/// among the top_k at that temperature, with `rng`).
int64_t ChooseToken(std::vector<float> logits, const GenerateOptions& options,
                    std::mt19937_64& rng);

/// Tokens that continue `prompt` (token ids in [0, vocab), at least one), from `model` in
/// evaluation mode (restored afterwards). Throws uopc::Error on a bad prompt or option.
Generation Generate(Gpt& model, const std::vector<int64_t>& prompt,
                    const GenerateOptions& options = {});

}  // namespace uopc
