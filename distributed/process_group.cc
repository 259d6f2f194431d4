#include "distributed/process_group.h"

#include <grpcpp/grpcpp.h>
#include <malloc.h>

#include "absl/strings/str_cat.h"

#include "core/status_macros.h"
#include "distributed/peer_address.h"
#include "distributed/peer_service.h"
#include "rpc/grpc_call.h"
#include "distributed/store.h"

namespace uopc {
namespace {

std::string Describe(const char* op, int64_t count, DType dtype) {
  return absl::StrCat(op, " of ", count, " x ", DTypeName(dtype));
}

}  // namespace

// ---- Work ----

absl::Status Work::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  return status_;
}

bool Work::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void Work::Finish(absl::Status s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = std::move(s);
    done_ = true;
  }
  cv_.notify_all();
}

// ---- the group ----

ProcessGroup::ProcessGroup(const JobEnv& env) : env_(env), mailbox_(env.rank, env.world_size) {}

absl::StatusOr<std::unique_ptr<ProcessGroup>> ProcessGroup::Create(const JobEnv& env) {
  // The data plane allocates and frees megabyte buffers at gigabytes per second; glibc would
  // hand each back to the kernel and fault it in again (a quarter of the all-reduce's time,
  // measured). Keep freed memory in the process instead, in one arena: gRPC's threads would
  // otherwise take their own, whose heaps glibc unmaps whenever they empty (which trimming
  // settings do not stop; half the remaining page faults, measured).
  static std::once_flag tuned;
  std::call_once(tuned, [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_ARENA_MAX, 1);
  });
  std::unique_ptr<ProcessGroup> g(new ProcessGroup(env));
  RETURN_IF_ERROR(g->Start());
  return g;
}

absl::Status ProcessGroup::Start() {
  grpc::ServerBuilder b;
  ConfigureServer(b);
  int port = 0;
  std::string listen = env_.rank == 0 ? absl::StrCat("0.0.0.0:", env_.master_port) : "0.0.0.0:0";
  b.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  PeerAddress me{"", env_.unix_sockets ? ThisHost() : "", ""};
  if (!me.host.empty()) {  // peers on this host come through a unix socket
    me.unix_name = NewUnixName();
    b.AddListeningPort(UnixAddress(me.unix_name), grpc::InsecureServerCredentials());
  }
  peer_service_ = std::make_unique<PeerService>(env_.token, &mailbox_);
  b.RegisterService(peer_service_.get());
  if (env_.rank == 0) {
    store_service_ = std::make_unique<StoreService>(env_.token);
    b.RegisterService(store_service_.get());
  }
  server_ = b.BuildAndStart();
  if (!server_ || port == 0)
    return absl::UnavailableError(
        absl::StrCat("rank ", env_.rank, ": cannot listen on ", listen,
                     me.unix_name.empty() ? "" : absl::StrCat(" and ", UnixAddress(me.unix_name)),
                     env_.rank == 0 ? absl::StrCat(": port ", env_.master_port,
                                                   " (MASTER_PORT) is in use, or not allowed")
                                    : ""));
  std::string master = absl::StrCat(env_.master_addr, ":", env_.master_port);
  StoreClient store(master, env_.token, env_.timeout);
  me.tcp = absl::StrCat(LocalAddressTowards(env_.master_addr), ":", port);
  RETURN_IF_ERROR(store.Set(absl::StrCat("addr/", env_.rank), me.Encode()));
  std::vector<std::shared_ptr<grpc::Channel>> channels(env_.world_size);
  std::vector<std::string> addresses(env_.world_size);
  for (int r = 0; r < env_.world_size; ++r) {
    absl::StatusOr<std::string> a = store.Get(absl::StrCat("addr/", r));
    if (!a.ok())
      return absl::Status(a.status().code(),
                          absl::StrCat("rendezvous: rank ", r,
                                       " did not join within the timeout: ", a.status().message()));
    absl::StatusOr<PeerAddress> peer = PeerAddress::Decode(*a);
    if (!peer.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("rendezvous: rank ", r, " published ", peer.status().message()));
    if (r != env_.rank) channels[r] = ChannelTo(*peer, me.host, &addresses[r]);
  }
  transport_ = std::make_unique<Transport>(env_.rank, std::move(channels), addresses, env_.token,
                                           env_.timeout, &mailbox_);
  worker_ = std::thread([this] { Loop(); });
  if (absl::Status s = Barrier()->Wait(); !s.ok())
    return absl::Status(s.code(), absl::StrCat("rendezvous: ", s.message()));
  return absl::OkStatus();
}

ProcessGroup::~ProcessGroup() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (transport_) transport_->Close(!failed_.empty());
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_.reset();  // its threads are joined before the services they call go away
}

std::shared_ptr<Work> ProcessGroup::Enqueue(std::string what, Run run, bool collective) {
  auto w = std::make_shared<Work>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(what), std::move(run), w, collective});
  }
  cv_.notify_all();
  return w;
}

void ProcessGroup::Loop() {
  for (;;) {
    Queued q;
    uint64_t seq;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;
      q = std::move(queue_.front());
      queue_.pop_front();
      seq = q.collective ? next_seq_++ : 0;
    }
    std::string what = q.collective ? absl::StrCat(q.what, " (collective #", seq, ")") : q.what;
    if (!failed_.empty()) {
      q.work->Finish(absl::FailedPreconditionError(absl::StrCat(
          "rank ", env_.rank, ": ", what, " not run: the group failed earlier: ", failed_)));
      continue;
    }
    absl::Status s = q.run(seq);
    // done when its frames are in the kernel: the caller's buffers, which the transport
    // sends from, are free again, and the peers get the frames even if this process exits
    if (s.ok()) s = transport_->Flush(std::chrono::steady_clock::now() + env_.timeout);
    if (q.collective) mailbox_.Forget(seq);
    q.work->Finish(s.ok() ? s : Fail(what, s));
  }
}

char* ProcessGroup::Scratch(int64_t bytes) {
  if (static_cast<size_t>(bytes) > scratch_.size()) scratch_.resize(bytes);
  return scratch_.data();
}

absl::Status ProcessGroup::Fail(const std::string& what, absl::Status why) {
  std::string msg = absl::StrCat("rank ", env_.rank, ": ", what, " failed: ", why.message());
  if (failed_.empty() && why.code() != absl::StatusCode::kAborted)
    transport_->AbortAll(absl::StrCat(what, " failed on rank ", env_.rank, ": ", why.message()));
  if (failed_.empty()) failed_ = msg;
  // the streams are cancelled and their sender threads joined: gRPC queues nothing more from
  // the caller's buffers (a socket write already under way at worst fails with EFAULT)
  transport_->Close(/*cancel=*/true);
  return absl::Status(why.code(), msg);
}

std::shared_ptr<Work> ProcessGroup::AllReduce(void* data, int64_t count, DType dtype, ReduceOp op) {
  return Enqueue(Describe("all_reduce", count, dtype), [=, this](uint64_t seq) {
    return DoAllReduce(seq, data, count, dtype, op, "all_reduce");
  });
}

std::shared_ptr<Work> ProcessGroup::ReduceScatter(const void* in, void* out, int64_t count,
                                                  DType dtype, ReduceOp op) {
  return Enqueue(Describe("reduce_scatter", count, dtype), [=, this](uint64_t seq) {
    return DoReduceScatter(seq, in, out, count, dtype, op);
  });
}

std::shared_ptr<Work> ProcessGroup::AllGather(const void* in, void* out, int64_t count,
                                              DType dtype) {
  return Enqueue(Describe("all_gather", count, dtype),
                 [=, this](uint64_t seq) { return DoAllGather(seq, in, out, count, dtype); });
}

std::shared_ptr<Work> ProcessGroup::Broadcast(void* data, int64_t count, DType dtype, int root) {
  return Enqueue(absl::StrCat(Describe("broadcast", count, dtype), " from rank ", root),
                 [=, this](uint64_t seq) { return DoBroadcast(seq, data, count, dtype, root); });
}

std::shared_ptr<Work> ProcessGroup::Send(const void* data, int64_t count, DType dtype, int to,
                                         int tag) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = p2p_send_[{to, tag}]++;
  }
  return Enqueue(
      absl::StrCat(Describe("send", count, dtype), " to rank ", to, " tag ", tag),
      [=, this](uint64_t) { return DoSend(seq, data, count, dtype, to, tag); },
      /*collective=*/false);
}

std::shared_ptr<Work> ProcessGroup::Recv(void* data, int64_t count, DType dtype, int from,
                                         int tag) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = p2p_recv_[{from, tag}]++;
  }
  return Enqueue(
      absl::StrCat(Describe("recv", count, dtype), " from rank ", from, " tag ", tag),
      [=, this](uint64_t) { return DoRecv(seq, data, count, dtype, from, tag); },
      /*collective=*/false);
}

std::shared_ptr<Work> ProcessGroup::Barrier() {
  auto one = std::make_shared<int32_t>(1);
  return Enqueue("barrier", [this, one](uint64_t seq) -> absl::Status {
    RETURN_IF_ERROR(DoAllReduce(seq, one.get(), 1, DType::kI32, ReduceOp::kSum, "barrier"));
    if (*one != env_.world_size)
      return absl::InternalError(
          absl::StrCat("barrier counted ", *one, " ranks of ", env_.world_size));
    return absl::OkStatus();
  });
}

}  // namespace uopc
