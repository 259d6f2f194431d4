// The peer service every rank hosts (uopc.wire.Peer): it takes the streams its peers push
// (and the links a stream offers: shared memory for a peer on this host, a TCP connection
// of its own for one on another) and the aborts
// they send, checking the job token first, and hands everything to the mailbox. Written
// out by hand rather than generated, so that Push reads frames as gRPC's raw buffers
// (frame_codec.h) instead of parsing every payload into a fresh string.
#pragma once

#include <atomic>
#include <string>

#include <grpcpp/grpcpp.h>

#include "distributed/mailbox.h"
#include "distributed/shm_link.h"
#include "distributed/tcp_link.h"
#include "distributed/wire.grpc.pb.h"  // gRPC's service and handler types, as generated code uses them

namespace uopc {

inline constexpr const char* kPushMethod = "/uopc.wire.Peer/Push";
inline constexpr const char* kAbortMethod = "/uopc.wire.Peer/Abort";

class PeerService final : public grpc::Service {
 public:
  PeerService(std::string token, Mailbox* mailbox);
  grpc::Status Push(grpc::ServerContext* ctx, grpc::ServerReader<grpc::ByteBuffer>* reader,
                    wire::Empty*);
  grpc::Status Abort(grpc::ServerContext* ctx, const wire::AbortRequest* req, wire::Empty*);

 private:
  /// Deposits the frames of rank `from` that come through `in` (a ShmReader or a TcpReader)
  /// until its "bye", `stop` (and then the frames already there), or an error (which breaks
  /// `from` in the mailbox).
  template <typename Reader>
  void ReadLink(Reader& in, int from, const std::atomic<bool>& stop);

  std::string token_;
  Mailbox* mailbox_;
};

}  // namespace uopc
