// RemoteQueue: an in-order queue of a remote device: one gRPC stream to the device server,
// on which commands (copies, launches, frees) go in batches rather than one round trip each.
// A batch leaves when it is large (256 commands or 1 MiB), or when something waits: an event,
// a synchronize, a copy out. The server says how far it has got only when asked (a sync)
// and when a command fails; an event is a command's number, done once a sync reply covers it.
//
// A failure is sticky until a synchronize reports it: every event at or after the failed
// command gives its error. A lost server (the stream ends) fails every pending and later
// call with DEVICE_LOST, within the deadline, naming the device and the address.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "backends/remote/remote_session.h"

namespace uopc {

class RemoteQueue {
 public:
  /// A queue (a stream) in `session`.
  static absl::StatusOr<std::shared_ptr<RemoteQueue>> Create(std::shared_ptr<RemoteSession> session);
  ~RemoteQueue();  // sends what is pending, ends the stream

  RemoteSession& session() { return *session_; }

  /// Queues `c` (its seq is set here); a copy out's bytes go to `out` when they arrive
  /// (which must stay valid until its event is done). Returns the command's number.
  absl::StatusOr<uint64_t> Push(remote::Command c, void* out = nullptr);
  /// Waits until the device has done command `seq` (sending what is pending, and a sync),
  /// at most `timeout`; its error, or an earlier one's.
  absl::Status Wait(uint64_t seq, std::chrono::milliseconds timeout);
  /// Whether command `seq` is done (asking the server, without waiting, when it is not).
  absl::StatusOr<bool> Query(uint64_t seq);
  /// Waits for everything queued; the failure since the last synchronize, if any.
  absl::Status Synchronize();

 private:
  explicit RemoteQueue(std::shared_ptr<RemoteSession> session) : session_(std::move(session)) {}
  void SendLocked(bool sync);                  // mu_ held: the pending batch to the outbox
  void Write();                                // the writer thread: the outbox, in order
  void Read();                                 // the reader thread: replies
  absl::Status StatusFor(uint64_t seq) const;  // mu_ held

  std::shared_ptr<RemoteSession> session_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<remote::Batch, remote::Reply>> stream_;
  std::thread reader_, writer_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  remote::Batch pending_;
  uint64_t pending_bytes_ = 0;
  bool first_ = true;        // the first batch names the session
  uint64_t next_seq_ = 1;
  uint64_t sent_ = 0;        // commands sent
  uint64_t sync_asked_ = 0;  // the last command a sync was sent after
  uint64_t synced_ = 0;      // commands done on the device
  absl::Status failure_;     // the first failure not yet reported by Synchronize
  uint64_t failed_seq_ = 0;
  bool ended_ = false;       // the stream is over: lost
  bool closing_ = false;     // no more batches: the writer ends the stream
  bool read_done_ = false;
  std::deque<remote::Batch> outbox_;
  absl::flat_hash_map<uint64_t, std::pair<void*, uint64_t>> outs_;  // copy outs in flight
};

}  // namespace uopc
