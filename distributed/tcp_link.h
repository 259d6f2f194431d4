// Frames from one process to another on another host through a TCP connection of their own,
// beside the gRPC stream: each frame is its length (8 bytes, little-endian) and its bytes,
// written from where its slices lie and read into one buffer that becomes the mailbox's
// frame. Across a network hop, gRPC's HTTP/2 framing, flow-control windows and extra copies
// cost what the wire does not (issue 33: 0.80-0.88x a raw TCP ring through a relay).
//
// The writer listens on this host's address towards the peer (port 0) and offers
// "ADDRESS:PORT/NONCE" on the gRPC stream, whose token authenticates it; the reader
// connects and sends the nonce first, and the writer takes the first connection that
// sends it (others are closed; all are read side by side, so a silent one holds up none)
// and stops listening.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/statusor.h"

namespace uopc {

class TcpWriter {
 public:
  /// A listening socket on this host's address towards `peer_host` (an IPv4 address).
  static absl::StatusOr<std::unique_ptr<TcpWriter>> Listen(const std::string& peer_host,
                                                           size_t max_frame);
  ~TcpWriter();

  /// "ADDRESS:PORT/NONCE", for the reader's Connect.
  const std::string& offer() const { return offer_; }
  /// Waits until the reader has connected and sent the nonce, or `timeout` passes (false).
  bool WaitAttached(std::chrono::milliseconds timeout);
  /// Writes `frame` (its length, then its bytes). Waits for room in the socket while
  /// `go_on()` (asked every 100 ms) says so. Errors: the frame is larger than the reader
  /// takes (nothing was written: the caller may send it another way); Unavailable: the
  /// connection failed; Cancelled: `go_on()` said stop.
  absl::Status Write(const grpc::ByteBuffer& frame, const std::function<bool()>& go_on);

 private:
  TcpWriter(int listener, std::string offer, std::string nonce, size_t max_frame);
  int listener_, fd_ = -1;
  std::string offer_, nonce_;
  size_t max_frame_;
};

class TcpReader {
 public:
  /// Connects to a writer's offer and sends its nonce.
  static absl::StatusOr<std::unique_ptr<TcpReader>> Connect(const std::string& offer,
                                                            size_t max_frame);
  ~TcpReader();

  /// The next frame, waiting up to `wait` for one to start (nullopt: none came, or Wake()
  /// was called); once one starts, its bytes are read to its end (or until Wake()). An
  /// error: the connection ended, or carried a length no writer writes.
  absl::StatusOr<std::optional<grpc::ByteBuffer>> Next(std::chrono::milliseconds wait);
  /// Ends a Next() that waits, now and for good, once what has come is read (from another
  /// thread).
  void Wake();

 private:
  TcpReader(int fd, int wake, size_t max_frame) : fd_(fd), wake_(wake), max_frame_(max_frame) {}
  /// Reads exactly `n` bytes into `out`; false where Wake() came first.
  absl::StatusOr<bool> ReadAll(char* out, size_t n, int first_wait_ms);
  int fd_, wake_;  // the connection; an eventfd that Wake() signals
  size_t max_frame_;
};

}  // namespace uopc
