#include "distributed/peer_service.h"

#include <atomic>
#include <optional>
#include <thread>
#include <type_traits>

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

namespace {

/// Checks a frame's sender and stream_seq against the stream's so far: consecutive, or (on
/// a path that shares the sender's frames with another) growing.
absl::Status CheckOrder(const wire::Frame& h, int* from, uint64_t* next, bool gaps) {
  if (*from < 0) *from = h.from();
  if (h.from() != *from)
    return absl::InvalidArgumentError(
        absl::StrCat("a stream from rank ", *from, " carried a frame of rank ", h.from()));
  if (h.stream_seq() < *next || (!gaps && h.stream_seq() != *next))
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", *from, " sent frame ", h.stream_seq(), " after frame ",
                     *next == 0 ? -1 : static_cast<int64_t>(*next - 1),
                     h.stream_seq() < *next ? " (a repeat)" : " (out of order or lost)"));
  *next = h.stream_seq() + 1;
  return absl::OkStatus();
}

}  // namespace

template <typename Reader>
void PeerService::ReadLink(Reader& in, int from, const std::atomic<bool>& stop) {
  constexpr bool kShared = std::is_same_v<Reader, ShmReader>;
  uint64_t next = 0;
  auto broken = [&](absl::string_view why) {
    mailbox_->Broken(
        from,
        absl::StrCat("rank ", from, kShared ? "'s shared memory link: " : "'s TCP link: ", why));
  };
  for (;;) {
    // once stopped (the stream ended), what was published and no more: a sender that exits
    // as soon as its collective is done has published every frame its peers need
    const bool last = stop.load(std::memory_order_acquire);
    absl::StatusOr<std::optional<grpc::ByteBuffer>> bytes =
        in.Next(std::chrono::milliseconds(last ? 0 : 100));
    if (!bytes.ok()) {
      // a TCP link whose writer stopped waiting for it (it sends on the stream instead) ends
      // before its first frame: not a fault (a writer that died ends its stream too)
      if (!kShared && next == 0 && absl::IsUnavailable(bytes.status())) return;
      return broken(bytes.status().message());
    }
    if (!*bytes) {
      if (last) return;
      // the sender waits for a slot that frames kept here (taken later) hold: copy them out
      if constexpr (kShared)
        if (in.starving()) mailbox_->Materialize(from);
      continue;
    }
    absl::StatusOr<InFrame> f = DecodeFrame(**std::move(bytes));
    if (!f.ok()) return broken(absl::StrCat("rank ", from, " sent ", f.status().message()));
    int sender = from;
    if (absl::Status s = CheckOrder(f->header, &sender, &next, /*gaps=*/true); !s.ok())
      return broken(s.message());
    if (f->header.op() == "bye") return;
    f->in_shared_memory = kShared;
    if (!mailbox_->Deposit(*std::move(f)).ok()) return;  // (the mailbox broke the sender)
  }
}

grpc::Status PeerService::Push(grpc::ServerContext* ctx,
                               grpc::ServerReader<grpc::ByteBuffer>* reader, wire::Empty*) {
  if (grpc::Status s = CheckToken(ctx, token_); !s.ok()) return s;
  grpc::ByteBuffer bytes;
  int from = -1;
  uint64_t next = 0;
  // frames through shared memory (op "shm"): read on a thread of their own until its "bye"
  std::unique_ptr<ShmReader> shared;
  std::unique_ptr<TcpReader> tcp;  // (op "tcp": the same, through a connection of their own)
  std::atomic<bool> stop{false};
  std::thread link_reader;
  // (at_once: the stream ended without a bye; the reader takes what was published and ends)
  auto end_link = [&](bool at_once) {
    if (!link_reader.joinable()) return;
    if (at_once) {
      stop = true;
      if (shared) shared->Wake();
      if (tcp) tcp->Wake();
    }
    link_reader.join();
  };
  auto refuse = [&](const std::string& why) {
    end_link(true);
    if (from >= 0) mailbox_->Broken(from, why), mailbox_->Connected(from, false);
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why);
  };
  while (reader->Read(&bytes)) {
    absl::StatusOr<InFrame> f = DecodeFrame(std::move(bytes));
    if (!f.ok())
      return refuse(from < 0 ? absl::StrCat("a peer sent ", f.status().message())
                             : absl::StrCat("rank ", from, " sent ", f.status().message()));
    const wire::Frame& h = f->header;
    // a sender that waits for shared memory checks the stream (outside its sequence)
    const bool linked = shared || tcp;
    if (linked && h.op() == "ping" && h.from() == from) continue;
    const bool first = from < 0;
    if (absl::Status s = CheckOrder(h, &from, &next, linked); !s.ok())
      return refuse(std::string(s.message()));
    if (first) mailbox_->Connected(from, true);
    if (h.op() == "shm" || h.op() == "tcp") {
      // a file this process cannot open (another /dev/shm), or an address it cannot reach,
      // is not an error: the sender, which waits for this side to open it, goes on over
      // this stream
      if (linked) return refuse(absl::StrCat("rank ", from, " offered a second link"));
      if (h.op() == "shm") {
        absl::StatusOr<std::unique_ptr<ShmReader>> in = ShmReader::Open(h.shared_memory());
        if (!in.ok()) continue;
        shared = *std::move(in);
        link_reader =
            std::thread([this, &stop, in = shared.get(), from] { ReadLink(*in, from, stop); });
      } else {
        absl::StatusOr<std::unique_ptr<TcpReader>> in =
            TcpReader::Connect(h.tcp_link(), kMaxLinkFrameBytes);
        if (!in.ok()) continue;
        tcp = *std::move(in);
        link_reader =
            std::thread([this, &stop, in = tcp.get(), from] { ReadLink(*in, from, stop); });
      }
      continue;
    }
    if (h.op() == "bye") {
      // its frames (and its own bye, written before this one, if the sender used the link)
      end_link(/*at_once=*/h.shared_memory().empty() && h.tcp_link().empty());
      mailbox_->Bye(from);
      mailbox_->Connected(from, false);
      return grpc::Status::OK;
    }
    if (absl::Status s = mailbox_->Deposit(*std::move(f)); !s.ok()) {
      end_link(true);
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(s.message()));
    }
    bytes.Clear();
  }
  end_link(true);
  if (from >= 0) {
    mailbox_->Broken(from,
                     absl::StrCat("rank ", from, "'s connection dropped (did the process die?)"));
    mailbox_->Connected(from, false);
  }
  return grpc::Status::OK;
}

grpc::Status PeerService::Abort(grpc::ServerContext* ctx, const wire::AbortRequest* req,
                                wire::Empty*) {
  if (grpc::Status s = CheckToken(ctx, token_); !s.ok()) return s;
  mailbox_->Abort(absl::StrCat("rank ", req->from(), " aborted: ", req->reason()));
  return grpc::Status::OK;
}

}  // namespace uopc
