// Frames on the wire without extra copies. The payload is the frame's last field (the
// highest field number, so any protobuf encoder puts it last), so a frame can be sent as
// two slices, the encoded header and the payload, and received as gRPC's own buffers: the
// header is decoded from the first bytes, and the payload is read where it lies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/statusor.h"

#include "distributed/wire.pb.h"

namespace uopc {

/// The largest frame a link beside a stream carries (shm_link.h, tcp_link.h): a segment of
/// 4 MiB (collectives.cc) and its header. A larger one goes over the stream.
inline constexpr size_t kMaxLinkFrameBytes = (4 << 20) + 4096;

/// A received frame: its header (payload empty) and the bytes it came in.
struct InFrame {
  wire::Frame header;
  grpc::ByteBuffer bytes;
  size_t payload_at = 0, payload_size = 0;
  bool in_shared_memory = false;  // `bytes` lie in a shared-memory slot (shm_link.h)

  /// Copies the payload to `dst` (payload_size bytes).
  void CopyTo(void* dst) const;
  /// Calls `run(p, first, n)` for consecutive runs of whole `width`-byte elements of the
  /// payload (p holds n elements starting at element `first`); an element split between
  /// two buffers comes as a run of one from a bounce buffer.
  void ForEachRun(int width, const std::function<void(const char*, int64_t, int64_t)>& run) const;
  /// The payload as slices of the received buffers (references, not copies).
  std::vector<grpc::Slice> PayloadSlices() const;
};

/// `header` (its payload ignored) followed by the payload, sent as the slices given.
grpc::ByteBuffer EncodeFrame(const wire::Frame& header, std::vector<grpc::Slice> payload);
/// The same with `size` bytes at `payload`, copied once.
grpc::ByteBuffer EncodeFrame(const wire::Frame& header, const void* payload, size_t size);
/// The frame in `bytes`; an error if it is not a frame.
absl::StatusOr<InFrame> DecodeFrame(grpc::ByteBuffer bytes);

}  // namespace uopc
