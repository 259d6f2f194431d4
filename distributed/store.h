// The rendezvous store: a small key-value store that rank 0 hosts (set, get that waits for
// the key, add) and the client every rank uses to publish its address and find the others'.
// Each start of a job (uopc_launch's restart count) meets at its own store: a store refuses a
// rank of another start, and the rank tries again until the store of its start is up, so a
// restarted rank never joins an earlier start's rank 0 that has not exited yet.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

#include "distributed/wire.grpc.pb.h"

namespace uopc {

class StoreService final : public wire::Store::Service {
 public:
  /// The store of the job's `restart`th start.
  explicit StoreService(std::string token, int restart = 0)
      : token_(std::move(token)), restart_(restart) {}
  grpc::Status Set(grpc::ServerContext* ctx, const wire::KeyValue* req, wire::Empty*) override;
  grpc::Status Get(grpc::ServerContext* ctx, const wire::Key* req, wire::KeyValue* reply) override;
  grpc::Status Add(grpc::ServerContext* ctx, const wire::AddRequest* req,
                   wire::AddReply* reply) override;

 private:
  /// OK if the call carries the job's token and comes from a rank of this store's start.
  grpc::Status Admit(const grpc::ServerContext* ctx) const;

  std::string token_;
  int restart_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> kv_;
};

class StoreClient {
 public:
  /// A client for a rank of the job's `restart`th start.
  StoreClient(const std::string& address, std::string token, std::chrono::milliseconds timeout,
              int restart = 0);
  absl::Status Set(const std::string& key, const std::string& value);
  /// The value of `key`, waiting until it is set (or the timeout).
  absl::StatusOr<std::string> Get(const std::string& key);
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta);
  /// Returns when `n` clients have called it with this `name` (or at the timeout).
  absl::Status Barrier(const std::string& name, int n);

 private:
  /// One call with the token and the restart, waiting (up to the timeout) for the store of
  /// this start to come up; errors name the store, the operation and the key.
  template <typename Request, typename Reply>
  absl::Status Call(const char* what, const std::string& key,
                    grpc::Status (wire::Store::Stub::*method)(grpc::ClientContext*, const Request&,
                                                              Reply*),
                    const Request& req, Reply* reply);

  std::unique_ptr<wire::Store::Stub> stub_;
  std::string token_, address_;
  std::chrono::milliseconds timeout_;
  int restart_;
};

}  // namespace uopc
