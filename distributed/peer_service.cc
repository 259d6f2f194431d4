#include "distributed/peer_service.h"

#include "absl/strings/str_cat.h"

#include "distributed/frame_codec.h"
#include "rpc/grpc_call.h"

namespace uopc {

PeerService::PeerService(std::string token, Mailbox* mailbox)
    : token_(std::move(token)), mailbox_(mailbox) {
  using grpc::internal::RpcMethod;
  using grpc::internal::RpcServiceMethod;
  // what generated code would register, with raw buffers for Push
  AddMethod(new RpcServiceMethod(
      kPushMethod, RpcMethod::CLIENT_STREAMING,
      new grpc::internal::ClientStreamingHandler<PeerService, grpc::ByteBuffer, wire::Empty>(
          [](PeerService* s, grpc::ServerContext* c, grpc::ServerReader<grpc::ByteBuffer>* r,
             wire::Empty* e) { return s->Push(c, r, e); },
          this)));
  AddMethod(new RpcServiceMethod(
      kAbortMethod, RpcMethod::NORMAL_RPC,
      new grpc::internal::RpcMethodHandler<PeerService, wire::AbortRequest, wire::Empty,
                                           grpc::protobuf::MessageLite,
                                           grpc::protobuf::MessageLite>(
          [](PeerService* s, grpc::ServerContext* c, const wire::AbortRequest* q, wire::Empty* e) {
            return s->Abort(c, q, e);
          },
          this)));
}

grpc::Status PeerService::Push(grpc::ServerContext* ctx,
                               grpc::ServerReader<grpc::ByteBuffer>* reader, wire::Empty*) {
  if (grpc::Status s = CheckToken(ctx, token_); !s.ok()) return s;
  grpc::ByteBuffer bytes;
  int from = -1;
  uint64_t next = 0;
  auto refuse = [&](const std::string& why) {
    if (from >= 0) mailbox_->Broken(from, why);
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why);
  };
  while (reader->Read(&bytes)) {
    absl::StatusOr<InFrame> f = DecodeFrame(std::move(bytes));
    if (!f.ok())
      return refuse(from < 0 ? absl::StrCat("a peer sent ", f.status().message())
                             : absl::StrCat("rank ", from, " sent ", f.status().message()));
    const wire::Frame& h = f->header;
    if (from < 0) from = h.from();
    if (h.from() != from)
      return refuse(
          absl::StrCat("a stream from rank ", from, " carried a frame of rank ", h.from()));
    if (h.stream_seq() != next)
      return refuse(
          absl::StrCat("rank ", from, " sent frame ", h.stream_seq(), " after frame ",
                       next == 0 ? -1 : static_cast<int64_t>(next - 1),
                       h.stream_seq() < next ? " (a repeat)" : " (out of order or lost)"));
    ++next;
    if (h.op() == "bye") {
      mailbox_->Bye(from);
      return grpc::Status::OK;
    }
    if (absl::Status s = mailbox_->Deposit(*std::move(f)); !s.ok())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(s.message()));
    bytes.Clear();
  }
  if (from >= 0)
    mailbox_->Broken(from,
                     absl::StrCat("rank ", from, "'s connection dropped (did the process die?)"));
  return grpc::Status::OK;
}

grpc::Status PeerService::Abort(grpc::ServerContext* ctx, const wire::AbortRequest* req,
                                wire::Empty*) {
  if (grpc::Status s = CheckToken(ctx, token_); !s.ok()) return s;
  mailbox_->Abort(absl::StrCat("rank ", req->from(), " aborted: ", req->reason()));
  return grpc::Status::OK;
}

}  // namespace uopc
