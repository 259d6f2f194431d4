#include "distributed/rpc.h"

#include "absl/strings/str_cat.h"

namespace uopc {

std::unique_ptr<grpc::ClientContext> CallContext(const std::string& token,
                                                 std::chrono::milliseconds timeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata(kTokenKey, token);
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

namespace {

// gRPC reads the socket into buffers of this size. Its default starts small and adapts
// (many small reads at first); larger than 1 MiB, the buffers fall out of the caches
// before they are consumed (64 MiB all-reduce busbw: 4 MiB and 512 KiB a few percent
// below 1 MiB, measured).
constexpr int kReadChunkBytes = 1 << 20;

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // no retries: nothing keeps a sent frame (a borrowed payload) for a replay
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE, kReadChunkBytes);
  args.SetInt(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, kReadChunkBytes);
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

void ConfigureServer(grpc::ServerBuilder& b) {
  b.SetMaxReceiveMessageSize(kMaxMessageBytes);
  b.SetMaxSendMessageSize(kMaxMessageBytes);
  b.AddChannelArgument(GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE, kReadChunkBytes);
  b.AddChannelArgument(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, kReadChunkBytes);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
}

grpc::Status CheckToken(const grpc::ServerContext* ctx, const std::string& token) {
  auto it = ctx->client_metadata().find(kTokenKey);
  if (it == ctx->client_metadata().end())
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "no uopc-token: this server serves one uopc job only");
  if (std::string(it->second.data(), it->second.size()) != token)
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "wrong uopc-token: this server serves another uopc job");
  return grpc::Status::OK;
}

absl::Status ToAbsl(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace uopc
