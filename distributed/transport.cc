#include "distributed/transport.h"

#include "absl/strings/str_cat.h"

#include "distributed/frame_codec.h"
#include "distributed/peer_service.h"
#include "rpc/grpc_call.h"

namespace uopc {

Transport::Transport(int rank, std::vector<std::shared_ptr<grpc::Channel>> channels,
                     std::vector<std::string> addresses, std::string token,
                     std::chrono::milliseconds timeout, Mailbox* mailbox)
    : rank_(rank),
      addresses_(std::move(addresses)),
      token_(std::move(token)),
      timeout_(timeout),
      mailbox_(mailbox),
      channels_(std::move(channels)) {
  const int p = static_cast<int>(addresses_.size());
  for (int r = 0; r < p; ++r) {
    stubs_.push_back(r == rank_ ? nullptr : wire::Peer::NewStub(channels_[r]));
    links_.push_back(std::make_unique<Link>());
  }
  // only now: the threads read the vectors above
  for (int r = 0; r < p; ++r)
    if (r != rank_) links_[r]->thread = std::thread([this, r] { Run(r); });
}

Transport::~Transport() { Close(); }

void Transport::Send(int to, wire::Frame header, const void* payload, size_t size, bool borrow) {
  std::vector<grpc::Slice> slices;
  if (size && borrow)  // gRPC reads it only to hand it to the kernel: nothing to free
    slices.push_back(grpc::Slice(
        const_cast<void*>(payload), size, [](void*) {}, nullptr));
  else if (size)
    slices.push_back(grpc::Slice(payload, size));
  Send(to, std::move(header), std::move(slices));
}

void Transport::Send(int to, wire::Frame header, std::vector<grpc::Slice> payload) {
  for (const grpc::Slice& s : payload) payload_bytes_.fetch_add(s.size(), std::memory_order_relaxed);
  Link& l = *links_[to];
  std::lock_guard<std::mutex> lock(l.mu);
  header.set_from(rank_);
  header.set_stream_seq(l.next_seq++);
  l.queue.push_back(EncodeFrame(header, std::move(payload)));
  l.cv.notify_all();
}

void Transport::Run(int to) {
  Link& l = *links_[to];
  // the stream lives as long as the group: its deadline is far, keepalive watches the peer
  auto ctx = CallContext(token_, std::chrono::hours(24 * 365));
  ctx->set_wait_for_ready(true);
  {
    std::lock_guard<std::mutex> lock(l.mu);
    l.ctx = ctx.get();
  }
  wire::Empty reply;
  // the Push stream with raw buffers (frame_codec.h): what the generated stub does, untyped
  const grpc::internal::RpcMethod push(kPushMethod, grpc::internal::RpcMethod::CLIENT_STREAMING,
                                       channels_[to]);
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer;
  bool failed = false;
  for (;;) {
    grpc::ByteBuffer f;
    {
      std::unique_lock<std::mutex> lock(l.mu);
      l.cv.wait(lock, [&] { return !l.queue.empty() || l.closing; });
      if (l.queue.empty()) break;  // closing, and all sent
      f = std::move(l.queue.front());
      l.queue.pop_front();
    }
    if (!failed) {  // else drop: the peer is gone (waits on it fail through the mailbox)
      if (!writer)
        writer.reset(grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(
            channels_[to].get(), push, ctx.get(), &reply));
      // written through: Write returns once the frame is in the kernel, not merely queued
      // in gRPC, so that Flush knows when a borrowed payload is free again
      if (!writer->Write(f, grpc::WriteOptions().set_write_through())) {
        failed = true;
        grpc::Status s = writer->Finish();
        // (the same cause as a receive's drop, which may come second: said the same way)
        mailbox_->Broken(to, absl::StrCat("rank ", to,
                                          "'s connection dropped (did the process die?): "
                                          "sending to it at ",
                                          addresses_[to], " failed: ",
                                          s.ok() ? "the stream closed" : s.error_message()));
      }
    }
    std::lock_guard<std::mutex> lock(l.mu);
    ++l.written;
    l.cv.notify_all();
  }
  if (writer && !failed) {
    wire::Frame bye;
    bye.set_from(rank_);
    bye.set_op("bye");
    {
      std::lock_guard<std::mutex> lock(l.mu);
      bye.set_stream_seq(l.next_seq++);
    }
    writer->Write(EncodeFrame(bye, nullptr, 0));
    writer->WritesDone();
    writer->Finish();
  }
  std::lock_guard<std::mutex> lock(l.mu);
  l.ctx = nullptr;
  l.done = true;
  l.cv.notify_all();
}

absl::Status Transport::Flush(std::chrono::steady_clock::time_point deadline) {
  for (size_t r = 0; r < links_.size(); ++r) {
    Link& l = *links_[r];
    std::unique_lock<std::mutex> lock(l.mu);
    const uint64_t end = l.next_seq;
    if (!l.cv.wait_until(lock, deadline, [&] { return l.written >= end || l.done; }))
      return absl::DeadlineExceededError(absl::StrCat("timed out sending to rank ", r, " at ",
                                                      addresses_[r], " (", end - l.written,
                                                      " frames not written: is it stalled?)"));
  }
  return absl::OkStatus();
}

void Transport::AbortAll(const std::string& reason) {
  for (size_t r = 0; r < stubs_.size(); ++r) {
    if (!stubs_[r]) continue;
    auto ctx = CallContext(token_, std::min(timeout_, std::chrono::milliseconds(2000)));
    wire::AbortRequest req;
    req.set_from(rank_);
    req.set_reason(reason);
    wire::Empty reply;
    stubs_[r]->Abort(ctx.get(), req, &reply);  // best effort: the peer may be the one that is gone
  }
}

void Transport::Close(bool cancel) {
  if (closed_) return;
  closed_ = true;
  for (auto& l : links_) {
    std::lock_guard<std::mutex> lock(l->mu);
    l->closing = true;
    if (cancel && l->ctx) l->ctx->TryCancel();
    l->cv.notify_all();
  }
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (auto& l : links_) {
    if (!l->thread.joinable()) continue;
    {
      std::unique_lock<std::mutex> lock(l->mu);
      if (!l->cv.wait_until(lock, deadline, [&] { return l->done; }) && l->ctx)
        l->ctx->TryCancel();  // a stalled peer
    }
    l->thread.join();
  }
}

}  // namespace uopc
