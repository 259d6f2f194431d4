// What every gRPC call of uopc shares (the distributed layer, the remote device): the
// token in the metadata, a deadline, channels with short reconnect backoff and keepalive
// (a frozen peer is noticed), servers with explicit message limits and keepalive, and the
// conversion of grpc::Status to absl::Status (at this edge and nowhere else).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace uopc {

inline constexpr const char* kTokenKey = "uopc-token";
/// The largest message a server accepts (segments are at most 4 MiB).
inline constexpr int kMaxMessageBytes = 16 << 20;

/// A client context carrying `token`, with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> CallContext(const std::string& token,
                                                 std::chrono::milliseconds timeout);
/// A channel to `address` ("host:port").
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address);
/// A channel over a unix socket connected now to the abstract socket `name`, with a send
/// buffer for megabyte frames; nullptr if it does not connect. It does not reconnect, and
/// has no connectivity state (gRPC aborts if asked for it).
std::shared_ptr<grpc::Channel> MakeUnixChannel(const std::string& name);
/// Server options shared by every uopc server.
void ConfigureServer(grpc::ServerBuilder& b);
/// OK if the call carries `token`; else PERMISSION_DENIED (the caller changes nothing).
grpc::Status CheckToken(const grpc::ServerContext* ctx, const std::string& token);
absl::Status ToAbsl(const grpc::Status& s);

}  // namespace uopc
