#include "distributed/transport.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "distributed/frame_codec.h"
#include "distributed/peer_service.h"
#include "rpc/grpc_call.h"

namespace uopc {

Transport::Transport(int rank, std::vector<std::shared_ptr<grpc::Channel>> channels,
                     std::vector<std::string> addresses, std::string token,
                     std::chrono::milliseconds timeout, Mailbox* mailbox, bool shared_memory,
                     bool tcp_link)
    : rank_(rank),
      addresses_(std::move(addresses)),
      token_(std::move(token)),
      timeout_(timeout),
      mailbox_(mailbox),
      shared_memory_(shared_memory),
      tcp_link_(tcp_link),
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
  Queue(to, std::move(header), std::move(slices));
}

void Transport::Queue(int to, wire::Frame header, std::vector<grpc::Slice> payload) {
  size_t size = 0;
  for (const grpc::Slice& s : payload) size += s.size();
  payload_bytes_.fetch_add(size, std::memory_order_relaxed);
  Link& l = *links_[to];
  std::lock_guard<std::mutex> lock(l.mu);
  header.set_from(rank_);
  header.set_stream_seq(l.next_seq++);
  l.queue.push_back({EncodeFrame(header, std::move(payload)), header.stream_seq(), size});
  l.cv.notify_all();
}

namespace {

// `link` (made, or why not) offered to the peer on the stream `writer` in a frame that
// `describe` fills in (its op and where the link is), the link's frames from `seq` on; null
// where it cannot be made or the peer does not open it within `wait` (a peer that cannot,
// as on another /dev/shm or behind a firewall, says nothing: the stream carries on).
template <typename Writer, typename Describe>
std::unique_ptr<Writer> Offer(absl::StatusOr<std::unique_ptr<Writer>> link, Describe describe,
                              int rank, uint64_t seq, std::chrono::milliseconds wait,
                              grpc::ClientWriter<grpc::ByteBuffer>& writer) {
  if (!link.ok()) return nullptr;
  wire::Frame hello;
  hello.set_from(rank);
  hello.set_stream_seq(seq);
  describe(hello, **link);
  if (!writer.Write(EncodeFrame(hello, nullptr, 0), grpc::WriteOptions().set_write_through()) ||
      !(*link)->WaitAttached(std::min(wait, std::chrono::milliseconds(5000))))
    return nullptr;
  return *std::move(link);
}

}  // namespace

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
  auto open = [&] {
    if (!writer)
      writer.reset(grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(
          channels_[to].get(), push, ctx.get(), &reply));
  };
  // a link of its own beside the stream: shared memory to a peer on this host, a TCP
  // connection to one on another
  const bool local = absl::StartsWith(addresses_[to], "unix");
  const std::string peer_host = addresses_[to].substr(0, addresses_[to].rfind(':'));
  std::unique_ptr<ShmWriter> shm;
  std::unique_ptr<TcpWriter> tcp;
  bool link_tried = local ? !shared_memory_ : !tcp_link_;
  // Writes to shared memory succeed whether the peer lives or not: a ping on the stream every
  // so often finds a peer that is gone (as a write to its socket would), while this link
  // waits for frames to send or for a free slot.
  constexpr auto kPingEvery = std::chrono::milliseconds(200);
  auto last_ping = std::chrono::steady_clock::now();
  auto ping = [&] {
    last_ping = std::chrono::steady_clock::now();
    wire::Frame ping;  // (outside the stream's sequence: frames queued before it come after)
    ping.set_from(rank_);
    ping.set_op("ping");
    return writer->Write(EncodeFrame(ping, nullptr, 0), grpc::WriteOptions().set_write_through());
  };
  auto go_on = [&] {
    {
      std::lock_guard<std::mutex> lock(l.mu);
      if (l.cancelled) return false;
    }
    return std::chrono::steady_clock::now() - last_ping < kPingEvery || ping();
  };
  bool failed = false;
  // (the same cause as a receive's drop, which may come second: said the same way)
  auto broken = [&](const std::string& why, bool by_ping = false) {
    failed = true;
    std::string msg = absl::StrCat("rank ", to,
                                   "'s connection dropped (did the process die?): "
                                   "sending to it at ",
                                   addresses_[to], " failed: ", why);
    // a peer found gone by a ping has frames here, maybe, that its stream's end will mark
    if (by_ping) return mailbox_->Lost(to, msg);
    mailbox_->Broken(to, msg);
  };
  for (;;) {
    Out f;
    {
      std::unique_lock<std::mutex> lock(l.mu);
      auto ready = [&] { return !l.queue.empty() || l.closing; };
      while (!ready()) {
        if (!shm || failed || l.cv.wait_for(lock, kPingEvery, ready)) {
          l.cv.wait(lock, ready);
          break;
        }
        lock.unlock();
        if (!ping()) broken("the stream closed", /*by_ping=*/true);
        lock.lock();
      }
      if (l.queue.empty()) break;  // closing, and all sent
      f = std::move(l.queue.front());
      l.queue.pop_front();
    }
    if (!failed) {  // else drop: the peer is gone (waits on it fail through the mailbox)
      open();
      if (!link_tried) {
        link_tried = true;
        if (local)
          shm = Offer(
              ShmWriter::Create(kMaxLinkFrameBytes),
              [](wire::Frame& h, ShmWriter& w) { h.set_op("shm"), h.set_shared_memory(w.name()); },
              rank_, f.seq, timeout_, *writer);
        else
          tcp = Offer(
              TcpWriter::Listen(peer_host, kMaxLinkFrameBytes),
              [](wire::Frame& h, TcpWriter& w) { h.set_op("tcp"), h.set_tcp_link(w.offer()); },
              rank_, f.seq, timeout_, *writer);
      }
      absl::Status via_link = absl::UnavailableError("");
      if (shm) {
        via_link = shm->Write(f.bytes, go_on);
        if (via_link.ok()) shared_bytes_.fetch_add(f.payload, std::memory_order_relaxed);
        if (absl::IsCancelled(via_link))
          broken("waiting for shared memory it holds", /*by_ping=*/true);
      } else if (tcp) {
        via_link = tcp->Write(f.bytes, go_on);
        if (via_link.ok()) tcp_bytes_.fetch_add(f.payload, std::memory_order_relaxed);
        if (absl::IsCancelled(via_link))
          broken("waiting for room in its TCP link", /*by_ping=*/true);
        if (absl::IsUnavailable(via_link)) broken(std::string(via_link.message()));
      }
      // else, and where the link had no room (out of memory): the stream. Written
      // through: Write returns once the frame is in the kernel, not merely queued in gRPC,
      // so that Flush knows when a borrowed payload is free again
      if (!via_link.ok() && !failed &&
          !writer->Write(f.bytes, grpc::WriteOptions().set_write_through())) {
        grpc::Status s = writer->Finish();
        broken(s.ok() ? "the stream closed" : s.error_message());
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
    if (shm || tcp) {  // the link's own bye first: the peer reads it before the stream's
      {
        std::lock_guard<std::mutex> lock(l.mu);
        bye.set_stream_seq(l.next_seq++);
      }
      if (shm) (void)shm->Write(EncodeFrame(bye, nullptr, 0), go_on);
      if (tcp) (void)tcp->Write(EncodeFrame(bye, nullptr, 0), go_on);
    }
    {
      std::lock_guard<std::mutex> lock(l.mu);
      bye.set_stream_seq(l.next_seq++);
    }
    // (its bye came before)
    if (shm) bye.set_shared_memory(shm->name());
    if (tcp) bye.set_tcp_link(tcp->offer());
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
    l->cancelled = cancel;
    if (cancel && l->ctx) l->ctx->TryCancel();
    l->cv.notify_all();
  }
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (auto& l : links_) {
    if (!l->thread.joinable()) continue;
    {
      std::unique_lock<std::mutex> lock(l->mu);
      if (!l->cv.wait_until(lock, deadline, [&] { return l->done; })) {
        l->cancelled = true;  // a stalled peer
        if (l->ctx) l->ctx->TryCancel();
      }
    }
    l->thread.join();
  }
}

}  // namespace uopc
