#include "frontend/continuous_batcher.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "frontend/error.h"
#include "frontend/paged_forward.h"
#include "frontend/realize.h"

namespace uopc {
namespace {

const BatcherOptions& Checked(const BatcherOptions& o) {
  if (o.max_sequences < 1 || o.step_tokens < 1 || o.num_blocks < 0 || o.block_size < 1 ||
      o.max_sequences > INT32_MAX || o.step_tokens > INT32_MAX)
    ThrowInvalid(absl::StrCat("continuous batcher: max_sequences ", o.max_sequences,
                              ", step_tokens ", o.step_tokens, ", num_blocks ", o.num_blocks,
                              ", block_size ", o.block_size,
                              "; expected each at least 1 (num_blocks 0: the default)"));
  return o;
}

// The options with step_tokens rounded up to whole groups of kTokenRows.
BatcherOptions Rounded(const BatcherOptions& o) {
  BatcherOptions r = o;
  r.step_tokens = (o.step_tokens + kTokenRows - 1) / kTokenRows * kTokenRows;
  return r;
}

int64_t PoolBlocks(const Gpt& model, const BatcherOptions& o) {
  if (o.num_blocks) return o.num_blocks;
  return o.max_sequences * ((model.config.context + o.block_size - 1) / o.block_size);
}

}  // namespace

ContinuousBatcher::ContinuousBatcher(Gpt& model, const BatcherOptions& options)
    : model_(model),
      options_(Rounded(Checked(options))),
      was_training_(model.training()),
      cache_(model, PoolBlocks(model, options), options.block_size) {
  model_.Train(false);
}

ContinuousBatcher::~ContinuousBatcher() { model_.Train(was_training_); }

int64_t ContinuousBatcher::Submit(const std::vector<int64_t>& prompt,
                                  const GenerateOptions& o) {
  CheckGenerateRequest(model_, prompt, o);
  const int64_t length = static_cast<int64_t>(prompt.size()) + o.max_tokens;
  if (length > model_.config.context || cache_.BlocksFor(length) > cache_.num_blocks())
    ThrowInvalid(absl::StrCat(
        "continuous batcher: a prompt of ", prompt.size(), " tokens and up to ", o.max_tokens,
        " new ones (", length, " positions, ", cache_.BlocksFor(length), " blocks of ",
        cache_.block_size(), "); expected at most the model's context (", model_.config.context,
        " positions) and the pool (", cache_.num_blocks(), " blocks)"));
  const int64_t id = next_id_++;
  Sequence& s = sequences_[id];
  s.tokens = prompt;
  s.options = o;
  s.rng.seed(o.seed);
  if (o.max_tokens == 0)
    s.finished = true;
  else
    waiting_.push_back(id);
  return id;
}

bool ContinuousBatcher::Cancel(int64_t id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end() || it->second.finished) return false;
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id), waiting_.end());
  Finish(id);
  return true;
}

bool ContinuousBatcher::Finished(int64_t id) const {
  auto it = sequences_.find(id);
  return it == sequences_.end() || it->second.finished;
}

void ContinuousBatcher::Forget(int64_t id) {
  if (Finished(id)) sequences_.erase(id);
}

const std::vector<int64_t>& ContinuousBatcher::Tokens(int64_t id) const {
  auto it = sequences_.find(id);
  if (it == sequences_.end())
    ThrowInvalid(absl::StrCat("continuous batcher: no request ", id));
  return it->second.generated;
}

void ContinuousBatcher::Finish(int64_t id) {
  sequences_.at(id).finished = true;
  running_.erase(std::remove(running_.begin(), running_.end(), id), running_.end());
  cache_.Release(id);
}

void ContinuousBatcher::Preempt(int64_t id) {
  running_.erase(std::remove(running_.begin(), running_.end(), id), running_.end());
  cache_.Release(id);
  sequences_.at(id).cached = 0;  // (recomputed from its tokens when it is admitted again)
  waiting_.push_front(id);
  ++stats_.preemptions;
}

// The full blocks of the longest prefix of `id`'s tokens that a running sequence has
// computed, shared: positions before the last token only, so that `id` computes at least
// its last token (for its logits) and writes no shared block.
void ContinuousBatcher::SharePrefix(int64_t id) {
  Sequence& s = sequences_.at(id);
  const int64_t bs = cache_.block_size();
  int64_t best = 0, from = -1;
  for (int64_t other : running_) {
    const Sequence& o = sequences_.at(other);
    const int64_t most = std::min<int64_t>(o.cached, static_cast<int64_t>(s.tokens.size()) - 1);
    int64_t same = 0;
    while (same < most && o.tokens[same] == s.tokens[same]) ++same;
    if (same / bs > best) best = same / bs, from = other;
  }
  if (best == 0) return;
  const std::vector<int32_t>& table = cache_.Table(from);
  cache_.Share(id, std::vector<int32_t>(table.begin(), table.begin() + best));
  s.cached = best * bs;
  stats_.shared_blocks += best;
}

// Admits waiting sequences whose prompts fit, then picks what each running one feeds:
// decodes first (oldest first), then prompt chunks with the budget left.
std::vector<ContinuousBatcher::Feed> ContinuousBatcher::Schedule() {
  while (!waiting_.empty() && running() < options_.max_sequences) {
    const int64_t id = waiting_.front();
    SharePrefix(id);
    if (!cache_.Grow(id, static_cast<int64_t>(sequences_.at(id).tokens.size()))) {
      cache_.Release(id);
      sequences_.at(id).cached = 0;
      break;
    }
    waiting_.pop_front();
    running_.push_back(id);
  }
  std::vector<Feed> feeds;
  int64_t budget = options_.step_tokens;
  for (const bool decoding : {true, false}) {
    for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
      const int64_t id = running_[i];
      const Sequence& s = sequences_.at(id);
      const int64_t pending = static_cast<int64_t>(s.tokens.size()) - s.cached;
      if ((pending == 1) != decoding) continue;
      const int64_t count = std::min(pending, budget);
      bool preempted = false;
      while (!cache_.Grow(id, s.cached + count)) {
        const int64_t victim = running_.back();  // the newest
        for (auto f = feeds.begin(); f != feeds.end(); ++f)
          if (f->id == victim) {
            budget += f->count;
            feeds.erase(f);
            break;
          }
        Preempt(victim);
        if (victim == id) {
          preempted = true;
          break;
        }
      }
      if (preempted) break;  // (it was the newest: no one after it runs)
      feeds.push_back({id, s.cached, count});
      budget -= count;
    }
  }
  return feeds;
}

// The logits (one row of vocab values per feed) of each feed's last token.
std::vector<float> ContinuousBatcher::Forward(const std::vector<Feed>& feeds) {
  const int64_t width = cache_.table_width(), S = static_cast<int64_t>(feeds.size());
  std::vector<int32_t> tokens(options_.step_tokens), positions(options_.step_tokens),
      rows(options_.step_tokens), sequence(options_.step_tokens),
      tables(options_.max_sequences * width), last(options_.max_sequences);
  int64_t M = 0, span = 1;
  for (int64_t f = 0; f < S; ++f) {
    const Feed& feed = feeds[f];
    const Sequence& s = sequences_.at(feed.id);
    for (int64_t p = feed.from; p < feed.from + feed.count; ++p, ++M) {
      tokens[M] = static_cast<int32_t>(s.tokens[p]);
      positions[M] = static_cast<int32_t>(p);
      rows[M] = static_cast<int32_t>(cache_.Row(feed.id, p));
      sequence[M] = static_cast<int32_t>(f);
    }
    last[f] = static_cast<int32_t>(M - 1);
    span = std::max(span, feed.from + feed.count);
    const std::vector<int32_t>& table = cache_.Table(feed.id);
    std::copy(table.begin(), table.end(), tables.begin() + f * width);
  }
  // padded to whole groups of kTokenRows: tokens that write the scratch row, whose logits
  // nobody reads
  const int64_t groups = (M + kTokenRows - 1) / kTokenRows;
  for (; M < groups * kTokenRows; ++M) rows[M] = static_cast<int32_t>(cache_.scratch_row());
  Device* dev = model_.wte.weight.device();
  std::vector<Tensor> in = {
      Tensor::FromVector(tokens, {options_.step_tokens}, DType::kI32, dev),
      Tensor::FromVector(positions, {options_.step_tokens}, DType::kI32, dev),
      Tensor::FromVector(rows, {options_.step_tokens}, DType::kI32, dev),
      Tensor::FromVector(sequence, {options_.step_tokens}, DType::kI32, dev),
      Tensor::FromVector(tables, {options_.max_sequences, width}, DType::kI32, dev),
      Tensor::FromVector(last, {options_.max_sequences}, DType::kI32, dev)};
  const int64_t steps = (span + kSpanStep - 1) / kSpanStep;  // (the span in whole steps)
  const VarValues vars = {{"step_groups", groups}, {"step_sequences", S}, {"span_steps", steps}};
  if (step_) return step_->Run(in, vars)[0].ToVector<float>();
  std::vector<Tensor> out;
  step_ = std::make_unique<CapturedStep>(
      [&](const std::vector<Tensor>& t) {
        const SymInt m = SymInt::Variable("step_groups", 1, options_.step_tokens / kTokenRows,
                                          groups) * kTokenRows;
        const SymInt s = SymInt::Variable("step_sequences", 1, options_.max_sequences, S);
        const SymInt l = SymInt::Variable(
            "span_steps", 1, (model_.config.context + kSpanStep - 1) / kSpanStep, steps);
        const PagedStep step{t[0].Slice(0, 0, m), t[1].Slice(0, 0, m), t[2].Slice(0, 0, m),
                             t[3].Slice(0, 0, m), t[4], t[5].Slice(0, 0, s),
                             l};
        return std::vector<Tensor>{PagedForward(model_, cache_, step)};
      },
      in, &out);
  return out[0].ToVector<float>();
}

bool ContinuousBatcher::Step() {
  const std::vector<Feed> feeds = Schedule();
  if (feeds.empty()) return false;
  const size_t plans_before = Runtime::Get().plans().size();
  const std::vector<float> logits = Forward(feeds);
  const size_t vocab = static_cast<size_t>(model_.config.vocab);
  ++stats_.steps;
  for (size_t f = 0; f < feeds.size(); ++f) {
    Sequence& s = sequences_.at(feeds[f].id);
    s.cached += feeds[f].count;
    stats_.tokens_fed += feeds[f].count;
    if (s.cached < static_cast<int64_t>(s.tokens.size())) continue;  // (a prompt's chunk)
    const int64_t token = ChooseToken(
        std::vector<float>(logits.begin() + f * vocab, logits.begin() + (f + 1) * vocab),
        s.options, s.rng);
    s.tokens.push_back(token);
    s.generated.push_back(token);
    ++stats_.tokens_generated;
    const bool go_on = !s.options.on_token || s.options.on_token(token);
    if (!go_on || static_cast<int64_t>(s.generated.size()) >= s.options.max_tokens ||
        token == s.options.stop_token)
      Finish(feeds[f].id);
  }
  stats_.plans_built += static_cast<int64_t>(Runtime::Get().plans().size() - plans_before);
  return true;
}

void ContinuousBatcher::Run() {
  while (Step()) {
  }
}

}  // namespace uopc
