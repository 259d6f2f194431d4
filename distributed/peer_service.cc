#include "distributed/peer_service.h"

#include "absl/strings/str_cat.h"

#include "distributed/rpc.h"

namespace uopc {

grpc::Status PeerService::Push(grpc::ServerContext* ctx, grpc::ServerReader<wire::Frame>* reader,
                               wire::Empty*) {
  if (grpc::Status s = CheckToken(ctx, token_); !s.ok()) return s;
  wire::Frame f;
  int from = -1;
  uint64_t next = 0;
  while (reader->Read(&f)) {
    if (from < 0) from = f.from();
    if (f.from() != from)
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("a stream from rank ", from, " carried a frame of rank ", f.from()));
    if (f.stream_seq() != next) {
      std::string why =
          absl::StrCat("rank ", from, " sent frame ", f.stream_seq(), " after frame ",
                       next == 0 ? -1 : static_cast<int64_t>(next - 1),
                       f.stream_seq() < next ? " (a repeat)" : " (out of order or lost)");
      mailbox_->Broken(from, why);
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why);
    }
    ++next;
    if (f.op() == "bye") {
      mailbox_->Bye(from);
      return grpc::Status::OK;
    }
    if (absl::Status s = mailbox_->Deposit(std::move(f)); !s.ok())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(s.message()));
    f = wire::Frame();
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
