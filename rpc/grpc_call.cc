#include "rpc/grpc_call.h"

#include <csignal>
#include <cstddef>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <grpcpp/create_channel_posix.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

// A unix socket's send buffer holds 208 KiB unless asked for more; gRPC then writes a 4 MiB
// frame in 20 pieces, each after a wakeup, and the CPUs idle between them (64 MiB busbw,
// p=2: 1.09 GB/s at 208 KiB, 1.6 at 1 MiB, about the same at 4 MiB, measured). The kernel
// caps it at net.core.wmem_max.
constexpr int kUnixSendBufferBytes = 4 << 20;

grpc::ChannelArguments ChannelArgs() {
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
  return args;
}

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address) {
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), ChannelArgs());
}

std::shared_ptr<grpc::Channel> MakeUnixChannel(const std::string& name) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (name.empty() || name.size() + 1 > sizeof a.sun_path) return nullptr;
  std::memcpy(a.sun_path + 1, name.data(), name.size());  // abstract: after a NUL
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  const int send_buffer = kUnixSendBufferBytes;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
    close(fd);
    return nullptr;
  }
  return grpc::CreateCustomInsecureChannelFromFd(name, fd, ChannelArgs());  // owns fd now
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
  // a port in use is refused at bind time, never shared with another job (gRPC allows
  // SO_REUSEPORT by default, and would split the callers between two servers)
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

void BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
}

bool ServeUntilSignal(grpc::ServerBuilder& b, const std::string& address, int64_t port,
                      const std::function<void(int port)>& started) {
  int bound = 0;
  b.AddListeningPort(address + ":" + std::to_string(port), grpc::InsecureServerCredentials(),
                     &bound);
  ConfigureServer(b);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  if (!server || bound == 0) return false;
  started(bound);
  // (a signal handler may not shut a server down: a thread waits for the signal instead)
  std::thread waiter([&] {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    int sig = 0;
    sigwait(&stop, &sig);
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  });
  server->Wait();
  waiter.join();
  return true;
}

grpc::Status CheckToken(const grpc::ServerContext* ctx, const std::string& token,
                        const char* how) {
  auto it = ctx->client_metadata().find(kTokenKey);
  if (it == ctx->client_metadata().end() || it->second.empty())  // (an unset token: empty)
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        std::string("no uopc-token: this server serves one uopc job only (") +
                            how + ")");
  if (std::string(it->second.data(), it->second.size()) != token)
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "wrong uopc-token: this server serves another uopc job");
  return grpc::Status::OK;
}

absl::Status ToAbsl(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  const auto code = static_cast<absl::StatusCode>(s.error_code());
  if (s.error_message().empty())  // (a failure of gRPC's own may come with no words)
    return absl::Status(code, absl::StrCat(absl::StatusCodeToString(code), " from gRPC"));
  return absl::Status(code, s.error_message());
}

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

}  // namespace uopc
