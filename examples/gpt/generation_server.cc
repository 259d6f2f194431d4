#include "examples/gpt/generation_server.h"

#include <chrono>

#include "absl/strings/str_cat.h"

#include "examples/gpt/char_corpus.h"
#include "frontend/error.h"
#include "rpc/grpc_call.h"

namespace uopc {
namespace {

constexpr const char* kTokenHow = "the client sets UOPC_SERVE_TOKEN";

}  // namespace

GenerationServer::GenerationServer(Gpt& model, GenerationServerOptions options)
    : options_(std::move(options)), batcher_(model, options_.batcher) {
  status_.set_vocab(model.config.vocab);
  status_.set_context(model.config.context);
  status_.set_vocabulary(options_.vocabulary);
  status_.set_num_blocks(batcher_.cache().num_blocks());
  status_.set_free_blocks(batcher_.cache().free_blocks());
  engine_ = std::thread([this] { Engine(); });
}

GenerationServer::~GenerationServer() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  work_.notify_all();
  engine_.join();
  for (auto& [id, s] : streams_) Finish(*s, absl::UnavailableError("the server is stopping"));
  for (auto& s : incoming_) Finish(*s, absl::UnavailableError("the server is stopping"));
}

void GenerationServer::Finish(Stream& s, absl::Status status) {
  {
    std::lock_guard<std::mutex> l(s.mu);
    if (s.done) return;
    s.done = true;
    s.status = std::move(status);
  }
  s.changed.notify_all();
}

absl::StatusOr<std::vector<int64_t>> GenerationServer::Prompt(
    const serve::GenerateRequest& req) const {
  if (!req.prompt_text().empty() && req.prompt_ids_size() > 0)
    return absl::InvalidArgumentError("a prompt as text and as ids; expected one of them");
  if (req.prompt_text().empty())
    return std::vector<int64_t>(req.prompt_ids().begin(), req.prompt_ids().end());
  if (options_.vocabulary.empty())
    return absl::InvalidArgumentError(
        "a prompt as text to a model with no character vocabulary; expected prompt_ids");
  absl::StatusOr<std::vector<int32_t>> ids = Encode(options_.vocabulary, req.prompt_text());
  if (!ids.ok()) return ids.status();
  return std::vector<int64_t>(ids->begin(), ids->end());
}

grpc::Status GenerationServer::Generate(grpc::ServerContext* ctx,
                                        const serve::GenerateRequest* req,
                                        grpc::ServerWriter<serve::GenerateReply>* writer) {
  if (grpc::Status s = CheckToken(ctx, options_.token, kTokenHow); !s.ok()) return s;
  absl::StatusOr<std::vector<int64_t>> prompt = Prompt(*req);
  if (!prompt.ok()) return ToGrpc(prompt.status());
  auto stream = std::make_shared<Stream>();
  stream->prompt = *std::move(prompt);
  GenerateOptions& o = stream->options;
  o.max_tokens = req->max_tokens();
  o.temperature = req->temperature();
  o.top_k = req->top_k();
  o.seed = req->seed();
  o.stop_token = req->has_stop_id() ? req->stop_id() : -1;
  o.on_token = [s = stream.get()](int64_t token) {
    {
      std::lock_guard<std::mutex> l(s->mu);
      s->tokens.push_back(token);
    }
    s->changed.notify_all();
    return true;
  };
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is stopping");
    const int64_t queued = static_cast<int64_t>(incoming_.size()) + status_.waiting();
    if (queued >= options_.max_queue)
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("the queue is full (", queued,
                                       " requests waiting, at most ", options_.max_queue,
                                       "); try again later"));
    incoming_.push_back(stream);
  }
  work_.notify_all();
  // the tokens as they come, until the request is done or the client goes
  for (;;) {
    std::deque<int64_t> tokens;
    bool done = false;
    {
      std::unique_lock<std::mutex> l(stream->mu);
      stream->changed.wait_for(l, std::chrono::milliseconds(50),
                               [&] { return stream->done || !stream->tokens.empty(); });
      tokens.swap(stream->tokens);
      done = stream->done;
    }
    bool gone = ctx->IsCancelled();
    for (int64_t t : tokens) {
      if (gone) break;
      serve::GenerateReply r;
      r.set_token(t);
      if (!options_.vocabulary.empty() && t >= 0 &&
          t < static_cast<int64_t>(options_.vocabulary.size()))
        r.set_text(std::string(1, options_.vocabulary[t]));
      gone = !writer->Write(r);
    }
    if (gone) {
      {
        std::lock_guard<std::mutex> l(mu_);
        cancels_.push_back(stream);
      }
      work_.notify_all();
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    }
    if (done) return ToGrpc(stream->status);
  }
}

grpc::Status GenerationServer::Status(grpc::ServerContext* ctx, const serve::StatusRequest*,
                                      serve::StatusReply* out) {
  if (grpc::Status s = CheckToken(ctx, options_.token, kTokenHow); !s.ok()) return s;
  std::lock_guard<std::mutex> l(mu_);
  *out = status_;
  out->set_queued(static_cast<int64_t>(incoming_.size()));
  return grpc::Status::OK;
}

void GenerationServer::Engine() {
  for (;;) {
    std::deque<std::shared_ptr<Stream>> incoming;
    std::vector<std::shared_ptr<Stream>> cancels;
    {
      std::unique_lock<std::mutex> l(mu_);
      work_.wait(l, [&] {
        return stop_ || !incoming_.empty() || !cancels_.empty() || batcher_.running() > 0 ||
               batcher_.waiting() > 0;
      });
      if (stop_) return;
      incoming.swap(incoming_);
      cancels.swap(cancels_);
    }
    for (auto& s : incoming) {
      try {
        streams_[batcher_.Submit(s->prompt, s->options)] = s;
      } catch (const Error& e) {
        Finish(*s, absl::InvalidArgumentError(e.what()));
      }
    }
    int64_t cancelled = 0;
    for (const auto& s : cancels)
      for (auto it = streams_.begin(); it != streams_.end(); ++it)
        if (it->second == s) {
          batcher_.Cancel(it->first);
          batcher_.Forget(it->first);
          streams_.erase(it);
          ++cancelled;
          break;
        }
    absl::Status failed;
    try {
      batcher_.Step();
    } catch (const Error& e) {  // (a device failing: every request in flight ends with it)
      failed = absl::InternalError(e.what());
    }
    int64_t finished = 0;
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (!failed.ok()) batcher_.Cancel(it->first);
      if (!failed.ok() || batcher_.Finished(it->first)) {
        Finish(*it->second, failed);
        batcher_.Forget(it->first);
        it = streams_.erase(it);
        ++finished;
      } else {
        ++it;
      }
    }
    std::lock_guard<std::mutex> l(mu_);
    const ContinuousBatcher::Stats& st = batcher_.stats();
    status_.set_free_blocks(batcher_.cache().free_blocks());
    status_.set_running(batcher_.running());
    status_.set_waiting(batcher_.waiting());
    status_.set_finished(status_.finished() + finished);
    status_.set_cancelled(status_.cancelled() + cancelled);
    status_.set_steps(st.steps);
    status_.set_preemptions(st.preemptions);
    status_.set_plans_built(st.plans_built);
  }
}

}  // namespace uopc
