// RemoteSession: this process's session on one device server (tools/uopc_device_server):
// the device it serves, and the buffers and programs made in it. Once the server is gone
// (or restarted), the session is lost for good: every later call says so, naming the
// device and the server's address, and handles made in it are never used again (a new
// session is another RemoteSession).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

#include "backends/remote/device_service.grpc.pb.h"

namespace uopc {

struct RemoteOptions {
  std::string token;
  std::chrono::milliseconds connect_timeout{10'000};  // opening a session
  std::chrono::milliseconds timeout{600'000};         // any other wait
};

class RemoteSession {
 public:
  /// A session on the server at `address`, as device `name` ("REMOTE:0").
  static absl::StatusOr<std::shared_ptr<RemoteSession>> Open(const std::string& name,
                                                             const std::string& address,
                                                             const RemoteOptions& options);

  const std::string& name() const { return name_; }
  const std::string& address() const { return address_; }
  const remote::OpenReply& info() const { return info_; }
  uint64_t id() const { return info_.session(); }
  const RemoteOptions& options() const { return options_; }
  remote::DeviceService::Stub& stub() { return *stub_; }

  absl::StatusOr<uint64_t> Allocate(uint64_t size);
  /// A program of kernels (name, serialized core/uop.proto), compiled by the server.
  absl::StatusOr<uint64_t> LoadProgram(const std::vector<std::pair<std::string, std::string>>& kernels);

  /// A call's context: the token, and a deadline `timeout` from now.
  std::unique_ptr<grpc::ClientContext> Context(std::chrono::milliseconds timeout) const;
  /// The status of a failed call or stream: DEVICE_LOST (and the session lost from now on)
  /// where the server is gone or no longer knows the session; else the call's own error.
  absl::Status Failed(const grpc::Status& s, const char* what);
  bool lost() const { return lost_.load(); }
  /// DEVICE_LOST, naming the device, the address and why.
  absl::Status LostStatus() const;

 private:
  RemoteSession() = default;

  std::string name_, address_;
  RemoteOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<remote::DeviceService::Stub> stub_;
  remote::OpenReply info_;
  std::atomic<bool> lost_{false};
  mutable std::mutex mu_;
  std::string why_;  // why it was lost
};

}  // namespace uopc
