// The peer service every rank hosts: it takes the streams its peers push and the aborts
// they send, checking the job token first, and hands everything to the mailbox.
#pragma once

#include <string>

#include "distributed/mailbox.h"
#include "distributed/wire.grpc.pb.h"

namespace uopc {

class PeerService final : public wire::Peer::Service {
 public:
  PeerService(std::string token, Mailbox* mailbox) : token_(std::move(token)), mailbox_(mailbox) {}
  grpc::Status Push(grpc::ServerContext* ctx, grpc::ServerReader<wire::Frame>* reader,
                    wire::Empty*) override;
  grpc::Status Abort(grpc::ServerContext* ctx, const wire::AbortRequest* req,
                     wire::Empty*) override;

 private:
  std::string token_;
  Mailbox* mailbox_;
};

}  // namespace uopc
