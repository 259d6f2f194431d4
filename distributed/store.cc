#include "distributed/store.h"

#include <algorithm>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "core/status_macros.h"
#include "rpc/grpc_call.h"

namespace uopc {
namespace {

constexpr const char* kRestartKey = "uopc-restart";

int RestartOf(const grpc::ServerContext* ctx) {
  auto it = ctx->client_metadata().find(kRestartKey);
  int restart = 0;
  if (it != ctx->client_metadata().end() &&
      !absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &restart))
    return -1;
  return restart;
}

}  // namespace

grpc::Status StoreService::Admit(const grpc::ServerContext* ctx) const {
  if (grpc::Status s = CheckToken(ctx, token_); !s.ok()) return s;
  if (int restart = RestartOf(ctx); restart != restart_)
    return grpc::Status(  // ABORTED: the client tries again until its timeout
        grpc::StatusCode::ABORTED,
        absl::StrCat("this store is rank 0's of the job's start ", restart_,
                     ", the caller is of start ", restart,
                     " (an earlier start's rank 0 still exiting, or the nodes' launchers have "
                     "restarted their ranks a different number of times)"));
  return grpc::Status::OK;
}

grpc::Status StoreService::Set(grpc::ServerContext* ctx, const wire::KeyValue* req, wire::Empty*) {
  if (grpc::Status s = Admit(ctx); !s.ok()) return s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    kv_[req->key()] = req->value();
  }
  cv_.notify_all();
  return grpc::Status::OK;
}

grpc::Status StoreService::Get(grpc::ServerContext* ctx, const wire::Key* req,
                               wire::KeyValue* reply) {
  if (grpc::Status s = Admit(ctx); !s.ok()) return s;
  std::unique_lock<std::mutex> lock(mu_);
  while (!kv_.count(req->key())) {
    if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    if (std::chrono::system_clock::now() >= ctx->deadline())
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          absl::StrCat("no key '", req->key(), "' before the deadline"));
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  reply->set_key(req->key());
  reply->set_value(kv_.at(req->key()));
  return grpc::Status::OK;
}

grpc::Status StoreService::Add(grpc::ServerContext* ctx, const wire::AddRequest* req,
                               wire::AddReply* reply) {
  if (grpc::Status s = Admit(ctx); !s.ok()) return s;
  int64_t v;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string& cur = kv_[req->key()];
    if (cur.empty()) cur = "0";
    if (!absl::SimpleAtoi(cur, &v))
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat("add to '", req->key(), "': its value is not an integer"));
    v += req->delta();
    cur = std::to_string(v);
  }
  cv_.notify_all();
  reply->set_value(v);
  return grpc::Status::OK;
}

StoreClient::StoreClient(const std::string& address, std::string token,
                         std::chrono::milliseconds timeout, int restart)
    : stub_(wire::Store::NewStub(MakeChannel(address))),
      token_(std::move(token)),
      address_(address),
      timeout_(timeout),
      restart_(restart) {}

template <typename Request, typename Reply>
absl::Status StoreClient::Call(const char* what, const std::string& key,
                               grpc::Status (wire::Store::Stub::*method)(grpc::ClientContext*,
                                                                         const Request&, Reply*),
                               const Request& req, Reply* reply) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  absl::Status s;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto ctx = CallContext(token_, std::max(left, std::chrono::milliseconds(1)));
    ctx->AddMetadata(kRestartKey, std::to_string(restart_));
    ctx->set_wait_for_ready(true);  // rank 0's store may still be starting
    s = ToAbsl(((*stub_).*method)(ctx.get(), req, reply));
    // a store of another start (ABORTED), or one that cancelled the call as it shut down (an
    // earlier start's rank 0 exiting: CANCELLED for a call it refused, UNAVAILABLE for one in
    // flight): this start's rank 0 may not be up yet. (A store that is not there at all is
    // waited for already: wait_for_ready.)
    const bool again = s.code() == absl::StatusCode::kAborted ||
                       s.code() == absl::StatusCode::kCancelled ||
                       s.code() == absl::StatusCode::kUnavailable;
    if (!again || std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (s.ok()) return s;
  return absl::Status(s.code(),
                      absl::StrCat("store at ", address_, ": ", what, " ", key, ": ", s.message()));
}

absl::Status StoreClient::Set(const std::string& key, const std::string& value) {
  wire::KeyValue req;
  req.set_key(key);
  req.set_value(value);
  wire::Empty reply;
  return Call("set", key, &wire::Store::Stub::Set, req, &reply);
}

absl::StatusOr<std::string> StoreClient::Get(const std::string& key) {
  wire::Key req;
  req.set_key(key);
  wire::KeyValue reply;
  RETURN_IF_ERROR(Call("get", key, &wire::Store::Stub::Get, req, &reply));
  return reply.value();
}

absl::StatusOr<int64_t> StoreClient::Add(const std::string& key, int64_t delta) {
  wire::AddRequest req;
  req.set_key(key);
  req.set_delta(delta);
  wire::AddReply reply;
  RETURN_IF_ERROR(Call("add", key, &wire::Store::Stub::Add, req, &reply));
  return reply.value();
}

absl::Status StoreClient::Barrier(const std::string& name, int n) {
  const std::string key = "barrier/" + name;
  ASSIGN_OR_RETURN(int64_t arrived, Add(key, 1));
  if (arrived == n) RETURN_IF_ERROR(Set(key + "/open", "1"));
  return Get(key + "/open").status();
}

}  // namespace uopc
