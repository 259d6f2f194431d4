// ContinuousBatcher: many generations at once over a PagedKvCache (continuous batching,
// as vLLM and llama-server serve). Each step feeds one new token of every decoding sequence
// and chunks of waiting prompts, up to a token budget, as one PagedForward; sequences join
// when the pool has blocks for their prompt and leave as soon as they finish, between any
// two steps. The step is captured once (CapturedStep): every later step, whatever its mix of
// sequences and lengths, runs the same plan with other VAR values, building no graph.
// A new sequence whose prompt begins as a running one's does shares the full blocks of that
// prefix, already computed (prefix sharing), and computes only the rest.
// When a sequence needs a block and none is free, the newest running sequence is preempted:
// its blocks go back and it waits to be recomputed from its tokens so far (vLLM's default),
// never an error.
//
//   ContinuousBatcher batcher(model);
//   int64_t a = batcher.Submit({20, 43, 1}, options), b = batcher.Submit({7}, options);
//   batcher.Run();                        // or Step() at a time, Submit between steps
//   batcher.Tokens(a);                    // a's new tokens, as Generate gives them
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "frontend/captured_step.h"
#include "frontend/generate.h"
#include "frontend/paged_kv_cache.h"

namespace uopc {

struct BatcherOptions {
  int64_t max_sequences = 32;  // running at once
  int64_t step_tokens = 64;    // tokens a step feeds at most: decodes first, then prompt chunks
                               // (rounded up to a multiple of kTokenRows, 8)
  int64_t num_blocks = 0;      // the pool; 0: enough for max_sequences full-context sequences
  int64_t block_size = 16;     // positions a block holds
};

class ContinuousBatcher {
 public:
  /// Puts `model` in evaluation mode (restored by the destructor). Throws uopc::Error on
  /// options below 1 (num_blocks: below 0).
  ContinuousBatcher(Gpt& model, const BatcherOptions& options = {});
  ~ContinuousBatcher();
  ContinuousBatcher(const ContinuousBatcher&) = delete;
  ContinuousBatcher& operator=(const ContinuousBatcher&) = delete;

  /// Queues a request for up to options.max_tokens tokens continuing `prompt` (temperature,
  /// top_k, seed, stop_token and on_token as Generate reads them; use_cache and on_logits
  /// are not read): its id. Throws uopc::Error on a bad request, or one that can never fit:
  /// prompt + max_tokens past the model's context, or more blocks than the pool has.
  int64_t Submit(const std::vector<int64_t>& prompt, const GenerateOptions& options);
  /// Ends a request now, freeing its blocks: false for an unknown or finished one.
  bool Cancel(int64_t id);
  /// One step; false when no request was waiting or running (nothing done).
  bool Step();
  /// Steps until every request has finished.
  void Run();

  bool Finished(int64_t id) const;
  /// Drops what is kept of a finished request (its tokens): a server's memory stays bounded.
  void Forget(int64_t id);
  /// The new tokens of a request so far (the prompt not included).
  const std::vector<int64_t>& Tokens(int64_t id) const;
  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  const PagedKvCache& cache() const { return cache_; }

  struct Stats {
    int64_t steps = 0;
    int64_t tokens_fed = 0;        // prompt and generated tokens run through the model
    int64_t tokens_generated = 0;
    int64_t preemptions = 0;
    int64_t shared_blocks = 0;     // blocks a new sequence took from another's prompt prefix
    int64_t plans_built = 0;       // plans compiled while stepping
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Sequence {
    std::vector<int64_t> tokens;  // the prompt, then what was generated
    int64_t cached = 0;           // positions whose keys and values are in the cache
    GenerateOptions options;
    std::mt19937_64 rng;
    std::vector<int64_t> generated;
    bool finished = false;
  };
  struct Feed {
    int64_t id, from, count;
  };
  std::vector<Feed> Schedule();
  void Preempt(int64_t id);
  void SharePrefix(int64_t id);
  void Finish(int64_t id);
  std::vector<float> Forward(const std::vector<Feed>& feeds);

  Gpt& model_;
  BatcherOptions options_;
  bool was_training_;
  PagedKvCache cache_;
  std::map<int64_t, Sequence> sequences_;
  std::deque<int64_t> waiting_;
  std::vector<int64_t> running_;  // oldest first
  int64_t next_id_ = 0;
  std::unique_ptr<CapturedStep> step_;
  Stats stats_;
};

}  // namespace uopc
