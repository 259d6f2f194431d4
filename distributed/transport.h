// The sending side of the data plane: one long-lived stream per peer, fed by a sender
// thread from a queue, so that a collective can go on (reducing the next segment) while the
// previous one is on the wire. Frames get their stream sequence numbers here. A stream that
// cannot be written marks the peer broken in the mailbox, so that whoever waits on that
// peer fails at once. To a peer on this host, frames go through shared memory
// (shm_link.h) once the peer has opened it: a memcpy instead of a socket's two kernel
// copies, and a futex instead of gRPC's wake-ups (the stream stays, to notice the peer's
// end, and for a frame that shared memory has no room for). To a peer reached over TCP,
// frames go on a TCP connection of their own (tcp_link.h): no HTTP/2 framing, flow-control
// windows or gRPC copies between the segment and the socket.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

#include "distributed/mailbox.h"
#include "distributed/shm_link.h"
#include "distributed/tcp_link.h"
#include "distributed/wire.grpc.pb.h"

namespace uopc {

class Transport {
 public:
  /// `channels[r]` reaches rank r (null for this rank); `addresses[r]` names it in messages
  /// (a unix socket's: the peer is on this host). `shared_memory`: to peers on this host,
  /// frames go through shared memory; `tcp_link`: to others, through TCP links.
  Transport(int rank, std::vector<std::shared_ptr<grpc::Channel>> channels,
            std::vector<std::string> addresses, std::string token,
            std::chrono::milliseconds timeout, Mailbox* mailbox, bool shared_memory = true,
            bool tcp_link = true);
  ~Transport();

  const std::string& address(int r) const { return addresses_[r]; }

  /// Queues `header` and `size` bytes of payload for rank `to`; the header's from and
  /// stream_seq are filled in here. The payload is copied, unless `borrow`: then gRPC sends
  /// it from where it lies, and it must stay unchanged until Flush() returns.
  void Send(int to, wire::Frame header, const void* payload, size_t size, bool borrow = false);
  /// Payload bytes queued to peers so far (what the collectives cost on the wire).
  uint64_t payload_bytes_sent() const { return payload_bytes_.load(std::memory_order_relaxed); }
  /// Of them, the bytes of frames that went through shared memory.
  uint64_t shared_bytes_sent() const { return shared_bytes_.load(std::memory_order_relaxed); }
  /// Of them, the bytes of frames that went through TCP links (tcp_link.h).
  uint64_t tcp_link_bytes_sent() const { return tcp_bytes_.load(std::memory_order_relaxed); }
  /// Blocks until every frame queued so far is written to the kernel (or dropped, its link
  /// broken): borrowed payloads are free again, and the frames reach the peers even if this
  /// process exits now. An error at the deadline names the peer.
  absl::Status Flush(std::chrono::steady_clock::time_point deadline);
  /// Tells every peer (best effort, briefly) that this rank aborted, and why.
  void AbortAll(const std::string& reason);
  /// Sends what is queued, says goodbye on every stream and closes them; streams that do
  /// not drain within the timeout (or at once, with `cancel`) are cancelled.
  void Close(bool cancel = false);

 private:
  std::atomic<uint64_t> payload_bytes_{0}, shared_bytes_{0}, tcp_bytes_{0};
  struct Out {
    grpc::ByteBuffer bytes;
    uint64_t seq;    // its stream_seq
    size_t payload;  // bytes
  };
  struct Link {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Out> queue;
    bool closing = false;
    bool cancelled = false;  // Close gave up on the stream: so does a wait for shared memory
    uint64_t next_seq = 0;
    uint64_t written = 0;                // frames written to the kernel or dropped
    bool done = false;                   // the sender thread has finished
    grpc::ClientContext* ctx = nullptr;  // the stream's context, to cancel it
    std::thread thread;
  };
  /// Send's queueing, with the payload as slices.
  void Queue(int to, wire::Frame header, std::vector<grpc::Slice> payload);
  void Run(int to);

  const int rank_;
  const std::vector<std::string> addresses_;
  const std::string token_;
  const std::chrono::milliseconds timeout_;
  Mailbox* mailbox_;
  const bool shared_memory_, tcp_link_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<wire::Peer::Stub>> stubs_;  // for Abort
  std::vector<std::unique_ptr<Link>> links_;
  bool closed_ = false;
};

}  // namespace uopc
