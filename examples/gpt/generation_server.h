// GenerationServer: gpt_serve's service (generation_service.proto). One engine thread owns
// the model and a ContinuousBatcher: it takes the requests that the gRPC handlers queue,
// steps the batch, and hands each new token to its request's stream; a handler writes its
// tokens to the client as they come. A client that cancels or disconnects has its request
// cancelled between two steps, its blocks freed at once. Bad requests are refused with a
// message naming what is wrong and leave the others going.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "examples/gpt/generation_service.grpc.pb.h"
#include "frontend/continuous_batcher.h"

namespace uopc {

struct GenerationServerOptions {
  std::string token;       // required of every call
  std::string vocabulary;  // a character model's characters ("": token ids only)
  BatcherOptions batcher;
  int64_t max_queue = 256;  // requests received and not yet running, at most
};

class GenerationServer final : public serve::Generation::Service {
 public:
  /// Starts the engine thread; `model` is its own from then on.
  GenerationServer(Gpt& model, GenerationServerOptions options);
  /// Stops the engine: streams still open end UNAVAILABLE.
  ~GenerationServer() override;

  grpc::Status Generate(grpc::ServerContext* ctx, const serve::GenerateRequest* req,
                        grpc::ServerWriter<serve::GenerateReply>* writer) override;
  grpc::Status Status(grpc::ServerContext* ctx, const serve::StatusRequest* req,
                      serve::StatusReply* out) override;

 private:
  // A request between its handler and the engine.
  struct Stream {
    std::vector<int64_t> prompt;
    GenerateOptions options;
    std::mutex mu;
    std::condition_variable changed;
    std::deque<int64_t> tokens;  // made, not yet written
    bool done = false;
    absl::Status status;
  };
  void Engine();
  void Finish(Stream& s, absl::Status status);
  absl::StatusOr<std::vector<int64_t>> Prompt(const serve::GenerateRequest& req) const;

  GenerationServerOptions options_;
  ContinuousBatcher batcher_;
  std::mutex mu_;  // what follows, between the handlers and the engine
  std::condition_variable work_;
  std::deque<std::shared_ptr<Stream>> incoming_;
  std::vector<std::shared_ptr<Stream>> cancels_;
  bool stop_ = false;
  serve::StatusReply status_;  // the engine's last figures
  // the engine's own
  std::map<int64_t, std::shared_ptr<Stream>> streams_;  // by batcher id
  std::thread engine_;
};

}  // namespace uopc
