// What every gRPC call of uopc shares (the distributed layer, the remote device): the
// token in the metadata, a deadline, channels with short reconnect backoff and keepalive
// (a frozen peer is noticed), servers with explicit message limits and keepalive, and the
// conversion of grpc::Status to absl::Status (at this edge and nowhere else).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
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
/// Blocks SIGTERM and SIGINT in this thread and in the threads it starts afterwards: a
/// server's main calls it first, so that ServeUntilSignal's waiting thread takes them.
void BlockStopSignals();
/// Adds a listening port `address:port` (0: any free one) to `b`, starts the server, calls
/// `started` with the port it got, and serves until SIGTERM or SIGINT (blocked first with
/// BlockStopSignals), then shuts down, giving calls in flight 2 s. False, having served
/// nothing, where it cannot listen there.
bool ServeUntilSignal(grpc::ServerBuilder& b, const std::string& address, int64_t port,
                      const std::function<void(int port)>& started);
/// OK if the call carries `token`; else PERMISSION_DENIED (the caller changes nothing),
/// saying how a client sets it (`how`: by default, a uopc job's devices).
grpc::Status CheckToken(const grpc::ServerContext* ctx, const std::string& token,
                        const char* how = "the client sets UOPC_DEVICE_TOKEN, or UOPC_JOB_TOKEN "
                                          "under uopc_launch");
absl::Status ToAbsl(const grpc::Status& s);
grpc::Status ToGrpc(const absl::Status& s);

}  // namespace uopc
