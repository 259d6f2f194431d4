// Generation with the KV cache against generation that recomputes every context: the same
// tokens and logits, from two plans; the cache refuses to be written past its end and
// stays as it was.
#include <gtest/gtest.h>

#include "tests/testing/error_of.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "frontend/generate.h"
#include "frontend/realize.h"

namespace uopc {
namespace {

using testing::ErrorOf;

struct Traced {
  Generation g;
  std::vector<std::vector<float>> logits;
};

Traced Greedy(Gpt& model, const std::vector<int64_t>& prompt, int64_t n, bool cache) {
  Traced r;
  GenerateOptions o;
  o.max_tokens = n;
  o.temperature = 0;
  o.use_cache = cache;
  o.on_logits = [&](const std::vector<float>& l) { r.logits.push_back(l); };
  r.g = Generate(model, prompt, o);
  return r;
}

void ExpectSame(const Traced& a, const Traced& b) {
  ASSERT_EQ(a.g.tokens, b.g.tokens);
  ASSERT_EQ(a.logits.size(), b.logits.size());
  for (size_t t = 0; t < a.logits.size(); ++t)
    for (size_t i = 0; i < a.logits[t].size(); ++i)
      ASSERT_NEAR(a.logits[t][i], b.logits[t][i], 1e-5) << "token " << t << ", logit " << i;
}

TEST(Generate, GreedyWithTheCacheEqualsRecomputingAndBuildsAtMostThreePlans) {
  Tensor::ManualSeed(21);
  Gpt model(GptConfig{50, 320, 32, 2, 2, 0.0});
  const std::vector<int64_t> prompt = {3, 14, 15, 9, 2};
  Traced cached = Greedy(model, prompt, 300, true);
  EXPECT_LE(cached.g.plans_built, 3);
  EXPECT_EQ(cached.g.prefills, 1);
  Traced full = Greedy(model, prompt, 300, false);
  ExpectSame(cached, full);
  // another prompt length, another run: nothing new to build
  Traced again = Greedy(model, {7, 7, 1}, 20, true);
  EXPECT_EQ(again.g.plans_built, 0);
}

TEST(Generate, PastTheContextTheLastContextTokensPredictTheNext) {
  Tensor::ManualSeed(22);
  Gpt model(GptConfig{20, 12, 16, 2, 1, 0.0});
  Traced cached = Greedy(model, {1, 2, 3, 4, 5}, 30, true);
  EXPECT_GT(cached.g.prefills, 1);
  ExpectSame(cached, Greedy(model, {1, 2, 3, 4, 5}, 30, false));
}

TEST(Generate, SamplingIsSeededAndTopKOneIsGreedy) {
  Tensor::ManualSeed(23);
  Gpt model(GptConfig{30, 32, 16, 2, 1, 0.0});
  GenerateOptions o;
  o.max_tokens = 12;
  o.temperature = 0.9;
  o.seed = 4;
  std::vector<int64_t> a = Generate(model, {1, 2}, o).tokens, b = Generate(model, {1, 2}, o).tokens;
  EXPECT_EQ(a, b);
  o.top_k = 1;
  EXPECT_EQ(Generate(model, {1, 2}, o).tokens, Greedy(model, {1, 2}, 12, true).g.tokens);
  o.stop_token = Greedy(model, {1, 2}, 12, true).g.tokens[3];
  std::vector<int64_t> stopped = Generate(model, {1, 2}, o).tokens;
  EXPECT_LE(stopped.size(), 4u);
  EXPECT_EQ(stopped.back(), o.stop_token);
}

TEST(Generate, BadPromptsAndOptionsAreRefused) {
  Gpt model(GptConfig{10, 8, 8, 2, 1, 0.0});
  EXPECT_EQ(ErrorOf([&] { Generate(model, {}); }),
            "generate: an empty prompt; expected at least one token");
  EXPECT_EQ(ErrorOf([&] { Generate(model, {1, 10}); }),
            "generate: prompt token 1 is 10; expected a token id in [0, 10)");
  GenerateOptions o;
  o.temperature = -1;
  EXPECT_EQ(ErrorOf([&] { Generate(model, {1}, o); }),
            "generate: max_tokens 100, temperature -1, top_k 0; expected max_tokens >= 0, a "
            "finite temperature >= 0, top_k >= 0");
}

TEST(KvCache, WritingPastItsEndIsRefusedAndLeavesItUnchanged) {
  Tensor::ManualSeed(24);
  Gpt model(GptConfig{10, 8, 8, 2, 1, 0.0});
  model.Train(false);
  KvCache cache(model);
  std::vector<int64_t> seq = {1, 2, 3, 4, 5, 6};
  model.Forward(Tensor::FromVector(seq, {1, 6}, DType::kI32), &cache).Realize();
  EXPECT_EQ(cache.pos(), 6);
  EXPECT_EQ(ErrorOf([&] {
              model.Forward(Tensor::FromVector(std::vector<int64_t>{7, 8, 9}, {1, 3}, DType::kI32),
                            &cache);
            }),
            "gpt: positions [6, 9) past the end of a cache of 8 positions; expected pos + T <= 8 "
            "(Reset it, or start again from the last tokens)");
  EXPECT_EQ(cache.pos(), 6);
  // the next token still sees the six positions it held
  std::vector<float> next =
      model.Forward(Tensor::FromVector(std::vector<int64_t>{7}, {1, 1}, DType::kI32), &cache)
          .ToVector<float>();
  seq.push_back(7);
  std::vector<float> full =
      model.Forward(Tensor::FromVector(seq, {1, 7}, DType::kI32)).Slice(1, 6, 7).ToVector<float>();
  ASSERT_EQ(next.size(), full.size());
  for (size_t i = 0; i < next.size(); ++i) EXPECT_NEAR(next[i], full[i], 1e-5) << i;
  KvCache other(Gpt(GptConfig{10, 16, 8, 2, 1, 0.0}));
  EXPECT_EQ(ErrorOf([&] {
              model.Forward(Tensor::FromVector(std::vector<int64_t>{1}, {1, 1}, DType::kI32),
                            &other);
            }),
            "gpt: a cache for 1 layers, context 16, batch 1 with a model of 1 layers, context 8 "
            "and token indices of shape (1, 1)");
}

}  // namespace
}  // namespace uopc
