// Many generations at once over a paged KV cache: each sequence's greedy tokens are the
// ones it gets alone, whatever joins and leaves beside it; one plan serves every step; a
// pool too small for everyone preempts and recomputes instead of failing; blocks come back.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/uir.h"
#include "frontend/continuous_batcher.h"
#include "frontend/paged_forward.h"
#include "frontend/realize.h"
#include "tests/testing/error_of.h"

namespace uopc {
namespace {

using testing::ErrorOf;

GenerateOptions Greedy(int64_t n) {
  GenerateOptions o;
  o.max_tokens = n;
  o.temperature = 0;
  return o;
}

std::vector<int64_t> Prompt(std::mt19937& rng, int64_t vocab, int64_t length) {
  std::vector<int64_t> p(length);
  for (int64_t& t : p) t = static_cast<int64_t>(rng() % vocab);
  return p;
}

struct Request {
  std::vector<int64_t> prompt;
  int64_t new_tokens;
};

// 32 requests of random lengths (8-40 prompt tokens, 4-24 new), for a context of 64.
std::vector<Request> Requests(int64_t vocab) {
  std::mt19937 rng(5);
  std::vector<Request> r;
  for (int i = 0; i < 32; ++i) {
    int64_t length = 8 + rng() % 33;
    r.push_back({Prompt(rng, vocab, length), 4 + static_cast<int64_t>(rng() % 21)});
  }
  return r;
}

Gpt Model() {
  Tensor::ManualSeed(31);
  return Gpt(GptConfig{50, 64, 32, 4, 2, 0.0});
}

TEST(ContinuousBatcher, AloneAndBatchedGiveGenerateTokensWithOnePlan) {
  Gpt model = Model();
  const std::vector<Request> requests = Requests(50);
  // each alone, one at a time
  std::vector<std::vector<int64_t>> alone;
  {
    ContinuousBatcher b(model, {.max_sequences = 4, .step_tokens = 24});
    for (const Request& r : requests) {
      int64_t id = b.Submit(r.prompt, Greedy(r.new_tokens));
      b.Run();
      alone.push_back(b.Tokens(id));
      ASSERT_EQ(static_cast<int64_t>(alone.back().size()), r.new_tokens);
    }
    EXPECT_EQ(b.cache().free_blocks(), b.cache().num_blocks());
  }
  // as Generate gives them, for a few
  for (int i : {0, 7, 19})
    EXPECT_EQ(Generate(model, requests[i].prompt, Greedy(requests[i].new_tokens)).tokens,
              alone[i])
        << "request " << i;
  // all 32 at once, joining as the pool lets them and leaving as they finish; the prompts
  // fed in chunks of at most 24 tokens among the decodes
  ContinuousBatcher b(model, {.max_sequences = 32, .step_tokens = 24});
  std::vector<int64_t> ids;
  for (const Request& r : requests) ids.push_back(b.Submit(r.prompt, Greedy(r.new_tokens)));
  int64_t most_running = 0;
  while (b.Step()) most_running = std::max(most_running, b.running());
  EXPECT_GT(most_running, 8);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(b.Tokens(ids[i]), alone[i]) << i;
  EXPECT_LE(b.stats().plans_built, 1);  // (the step, for these sizes)
  EXPECT_EQ(b.cache().free_blocks(), b.cache().num_blocks());
}

TEST(ContinuousBatcher, APoolForFourSequencesServesThirtyTwoByPreemption) {
  Gpt model = Model();
  const std::vector<Request> requests = Requests(50);
  std::vector<std::vector<int64_t>> want;
  for (const Request& r : requests) want.push_back(Generate(model, r.prompt, Greedy(r.new_tokens)).tokens);
  // 4 full-context sequences' blocks (4 x 64 / 16), 32 admitted at once
  ContinuousBatcher b(model, {.max_sequences = 32, .step_tokens = 64, .num_blocks = 16});
  std::vector<int64_t> ids;
  for (const Request& r : requests) ids.push_back(b.Submit(r.prompt, Greedy(r.new_tokens)));
  b.Run();
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(b.Tokens(ids[i]), want[i]) << i;
  EXPECT_GT(b.stats().preemptions, 0);
  EXPECT_EQ(b.cache().free_blocks(), 16);
}

// Requests whose prompts begin alike share the full blocks of that prefix, computed once:
// fewer tokens fed and blocks held, the same tokens as alone.
TEST(ContinuousBatcher, APromptPrefixIsSharedNotRecomputed) {
  Gpt model = Model();
  std::mt19937 rng(9);
  const std::vector<int64_t> p = Prompt(rng, 50, 40);
  std::vector<int64_t> c(p.begin(), p.begin() + 20);
  c.push_back((p[20] + 1) % 50);  // (differs at position 20)
  const std::vector<std::vector<int64_t>> prompts = {p, p, c};
  std::vector<std::vector<int64_t>> alone;
  for (const auto& q : prompts) alone.push_back(Generate(model, q, Greedy(10)).tokens);
  ContinuousBatcher b(model, {.max_sequences = 4, .step_tokens = 64});
  const int64_t first = b.Submit(prompts[0], Greedy(10));
  ASSERT_TRUE(b.Step());  // (the first prompt computed)
  const int64_t held = b.cache().num_blocks() - b.cache().free_blocks();
  const int64_t second = b.Submit(prompts[1], Greedy(10)), third = b.Submit(prompts[2], Greedy(10));
  ASSERT_TRUE(b.Step());
  // the second holds the first's two full blocks (32 positions) and one of its own; the
  // third, one (16 of its 20 common positions) and one of its own
  EXPECT_EQ(b.stats().shared_blocks, 3);
  EXPECT_EQ(b.cache().num_blocks() - b.cache().free_blocks(), held + 2);
  EXPECT_EQ(b.stats().tokens_fed, 40 + (40 - 32) + (21 - 16) + 1);  // (+ the first's decode)
  b.Run();
  EXPECT_EQ(b.Tokens(first), alone[0]);
  EXPECT_EQ(b.Tokens(second), alone[1]);
  EXPECT_EQ(b.Tokens(third), alone[2]);
  EXPECT_EQ(b.cache().free_blocks(), b.cache().num_blocks());
}

// on_token sees every token (the last too), and returning false ends the request there.
TEST(ContinuousBatcher, OnTokenSeesEveryTokenAndCanStop) {
  Gpt model = Model();
  ContinuousBatcher b(model, {.max_sequences = 2, .step_tokens = 16});
  std::vector<int64_t> seen, stopped;
  GenerateOptions all = Greedy(5), three = Greedy(20);
  all.on_token = [&](int64_t t) { return seen.push_back(t), true; };
  three.on_token = [&](int64_t t) { return stopped.push_back(t), stopped.size() < 3; };
  const int64_t a = b.Submit({1, 2, 3}, all), c = b.Submit({4, 5}, three);
  b.Run();
  EXPECT_EQ(seen, b.Tokens(a));
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(stopped, b.Tokens(c));
  EXPECT_EQ(stopped.size(), 3u);
}

TEST(ContinuousBatcher, CancelFreesBlocksAtOnceAndBadRequestsAreRefused) {
  Gpt model = Model();
  ContinuousBatcher b(model, {.max_sequences = 4, .step_tokens = 16});
  std::mt19937 rng(1);
  const int64_t a = b.Submit(Prompt(rng, 50, 30), Greedy(20));
  const int64_t c = b.Submit(Prompt(rng, 50, 5), Greedy(3));
  ASSERT_TRUE(b.Step());
  const int64_t free_before = b.cache().free_blocks();
  EXPECT_TRUE(b.Cancel(a));
  EXPECT_EQ(b.cache().free_blocks(), free_before + 2);  // (30 positions: 2 blocks)
  EXPECT_FALSE(b.Cancel(a));
  b.Run();
  EXPECT_TRUE(b.Finished(c));
  EXPECT_EQ(b.Tokens(c).size(), 3u);
  EXPECT_EQ(ErrorOf([&] { b.Submit(Prompt(rng, 50, 60), Greedy(5)); }),
            "continuous batcher: a prompt of 60 tokens and up to 5 new ones (65 positions, 5 "
            "blocks of 16); expected at most the model's context (64 positions) and the pool "
            "(16 blocks)");
  EXPECT_NE(ErrorOf([&] { b.Submit({3, 50}, Greedy(1)); }).find("prompt token 1 is 50"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { ContinuousBatcher(model, {.step_tokens = 0}); }).find("step_tokens 0"),
            std::string::npos);
}

// Blocks come from the free list as a sequence grows and go back when it ends; a row is
// where the table says.
TEST(PagedKvCache, BlocksGrowAndComeBack) {
  Gpt model = Model();
  PagedKvCache cache(model, 4, 16);
  EXPECT_TRUE(cache.Grow(7, 20));
  EXPECT_EQ(cache.Table(7).size(), 2u);
  EXPECT_FALSE(cache.Grow(8, 64 - 16 + 1));  // (needs 4 blocks; 2 are free)
  EXPECT_TRUE(cache.Table(8).empty());
  EXPECT_EQ(cache.free_blocks(), 2);
  const int64_t row = cache.Row(7, 17);
  EXPECT_EQ(row, cache.Table(7)[1] * 16 + 1);
  cache.Release(7);
  EXPECT_EQ(cache.free_blocks(), 4);
  EXPECT_TRUE(cache.Grow(8, 64));  // (all four)
  EXPECT_FALSE(cache.Grow(9, 1));
  EXPECT_NE(ErrorOf([&] { cache.Grow(8, 65); }).find("expected at most the model's context, 64"),
            std::string::npos);
}

// A step reads a sequence's positions in units that lie together in one block: 8 (the span
// step) where the block size is a multiple of 8, fewer where it is not (4 of a block of 4,
// two units a step). Either way, the tokens are Generate's.
TEST(ContinuousBatcher, BlocksOfAnySizeGiveGenerateTokens) {
  Gpt model = Model();
  std::vector<Request> requests = Requests(50);
  requests.resize(8);
  for (int64_t block_size : {4, 24}) {
    ContinuousBatcher b(model, {.max_sequences = 8, .step_tokens = 24, .block_size = block_size});
    std::vector<int64_t> ids;
    for (const Request& r : requests) ids.push_back(b.Submit(r.prompt, Greedy(r.new_tokens)));
    b.Run();
    for (int i : {0, 3, 7})
      EXPECT_EQ(b.Tokens(ids[i]),
                Generate(model, requests[i].prompt, Greedy(requests[i].new_tokens)).tokens)
          << "request " << i << ", blocks of " << block_size;
  }
}

// A step reads its sequences' rows through their block tables and writes its own: no loop of
// any kernel runs over the pool (37 blocks of 16: 592 rows), so a step costs what its
// positions do, not what the pool holds.
TEST(PagedForward, NoKernelLoopsOverThePool) {
  Gpt model = Model();
  PagedKvCache cache(model, 37, 16);
  ASSERT_TRUE(cache.Grow(0, 20));
  ASSERT_TRUE(cache.Grow(1, 3));
  std::vector<int32_t> rows;
  for (int p = 17; p < 20; ++p) rows.push_back(static_cast<int32_t>(cache.Row(0, p)));
  rows.push_back(static_cast<int32_t>(cache.Row(1, 2)));
  std::vector<int32_t> tables(2 * cache.table_width(), 0);
  for (int s = 0; s < 2; ++s)
    std::copy(cache.Table(s).begin(), cache.Table(s).end(), tables.begin() + s * cache.table_width());
  const PagedStep step{Tensor::FromVector(std::vector<int32_t>{1, 2, 3, 4}, {4}),
                       Tensor::FromVector(std::vector<int32_t>{17, 18, 19, 2}, {4}),
                       Tensor::FromVector(rows, {4}),
                       Tensor::FromVector(std::vector<int32_t>{0, 0, 0, 1}, {4}),
                       Tensor::FromVector(tables, {2, cache.table_width()}),
                       Tensor::FromVector(std::vector<int32_t>{2, 3}, {2}),
                       SymInt::Variable("span_steps", 1, 8, 3)};
  Tensor logits = PagedForward(model, cache, step);
  absl::StatusOr<std::shared_ptr<const Plan>> plan = Runtime::Get().PlanFor({logits.data()});
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const Plan::Kernel* k : (*plan)->kernels())
    for (const UOp& u : k->ast.Toposort())
      for (int64_t pool_rows : {int64_t{37 * 16}, 37 * 16 / kSpanStep})  // (rows, units of rows)
        EXPECT_FALSE(u.is(Ops::RANGE) && u.src(0).ConstIntValue() == pool_rows) << ToUir(k->ast);
  EXPECT_EQ(logits.shape(), (TensorShape{2, 50}));
  logits.Realize();  // (the cache's writes done: a write left pending holds what it reads)
}

}  // namespace
}  // namespace uopc
