// DeviceServer: hosts one of this machine's devices for the remote plugin
// (backends/remote), over gRPC (backends/remote/device_service.proto). Clients open
// sessions; a session's buffers and programs are its own (a handle of another session, or
// of a server that has restarted, is refused). Kernels arrive serialized and are rendered
// and compiled here, by the device's own backend (with its compile cache); a session's
// queue is a stream of batched commands, run in order on the device.
//
// Every call must carry the token; one without it is refused and changes nothing. Bad
// input (unknown handles, ranges past a buffer, malformed kernels) is an error for that
// call or command, never a crash, and the server goes on serving. A simulated latency per
// call and a bandwidth limit per copied byte let placement be studied on one machine.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "backends/remote/device_service.grpc.pb.h"
#include "core/kernel_signature.h"
#include "devices/device.h"

namespace uopc {

struct DeviceServerOptions {
  std::string token;           // required of every call
  int64_t latency_us = 0;      // added to every call and every batch
  double bandwidth_gbps = 0;   // copies take at least bytes / bandwidth (0: no limit)
};

class DeviceServer final : public remote::DeviceService::Service {
 public:
  DeviceServer(Device* device, DeviceServerOptions options)
      : device_(device), options_(std::move(options)) {}

  grpc::Status Open(grpc::ServerContext* ctx, const remote::OpenRequest* req,
                    remote::OpenReply* out) override;
  grpc::Status Allocate(grpc::ServerContext* ctx, const remote::AllocateRequest* req,
                        remote::AllocateReply* out) override;
  grpc::Status LoadProgram(grpc::ServerContext* ctx, const remote::LoadProgramRequest* req,
                           remote::LoadProgramReply* out) override;
  grpc::Status Run(grpc::ServerContext* ctx,
                   grpc::ServerReaderWriter<remote::Reply, remote::Batch>* stream) override;

  /// How long copying `bytes` takes at `gbps` Gbit/s (0 for no limit): at most 1e9 s, so
  /// that a tiny bandwidth stalls instead of overflowing the clock into no wait at all.
  static double ThrottleSeconds(uint64_t bytes, double gbps);

 private:
  struct Loaded {
    std::shared_ptr<Program> program;
    std::vector<LaunchDims> dims;             // by entry, as the backend rendered them
    std::vector<KernelSignature> signatures;  // by entry: what a launch must pass
  };
  struct Session {
    absl::flat_hash_map<uint64_t, Buffer> buffers;
    absl::flat_hash_map<uint64_t, Loaded> programs;
    int streams = 0;  // open queues; the session ends with its last one
  };
  /// The commands of one queue; `session` is set once its first batch names it.
  grpc::Status Serve(grpc::ServerReaderWriter<remote::Reply, remote::Batch>* stream,
                     uint64_t* session);
  /// The token, and the simulated latency of a call.
  grpc::Status Admit(const grpc::ServerContext* ctx) const;
  /// Runs one command; a failure is its error (the stream goes on).
  absl::Status Execute(uint64_t session, const remote::Command& c, remote::Reply* data);
  /// A launch's buffers and VARs against its kernel's signature: a kernel must never reach
  /// past a buffer of the server.
  static absl::Status CheckLaunch(const KernelSignature& sig, const Session& s,
                                  const remote::Launch& m, std::vector<uopc_buffer*>* handles);
  absl::StatusOr<Buffer> Find(uint64_t session, uint64_t buffer, uint64_t offset,
                              uint64_t size, const char* what);
  void Throttle(uint64_t bytes) const;

  Device* device_;
  DeviceServerOptions options_;
  std::mutex mu_;  // sessions, and the device's queue (one caller at a time)
  absl::flat_hash_map<uint64_t, Session> sessions_;
  uint64_t next_id_ = 1;
};

}  // namespace uopc
