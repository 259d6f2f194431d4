#include "distributed/process_group.h"

#include <algorithm>

#include <grpcpp/grpcpp.h>
#include <malloc.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "core/status_macros.h"
#include "core/trace.h"
#include "distributed/peer_address.h"
#include "distributed/peer_service.h"
#include "distributed/store.h"
#include "rpc/grpc_call.h"

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
  std::vector<int> all(env.world_size);
  for (int r = 0; r < env.world_size; ++r) all[r] = r;
  trace::SetRank(env.rank, env.world_size);
  std::unique_ptr<ProcessGroup> g(
      new ProcessGroup(std::make_shared<Job>(env), 0, std::move(all), env.rank));
  RETURN_IF_ERROR(g->Start());
  return g;
}

absl::Status ProcessGroup::Start() {
  Job& j = *job_;
  const JobEnv& env = j.env;
  if (env.master_port == 0 && env.world_size > 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", env.rank, " of ", env.world_size,
        ": no MASTER_PORT (port 0): the ranks meet at rank 0's port, so a job of more than one "
        "rank needs it set"));
  grpc::ServerBuilder b;
  ConfigureServer(b);
  int port = 0;
  std::string listen = env.rank == 0 ? absl::StrCat("0.0.0.0:", env.master_port) : "0.0.0.0:0";
  b.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  PeerAddress me{"", env.unix_sockets ? ThisHost() : "", ""};
  if (!me.host.empty()) {  // peers on this host come through a unix socket
    me.unix_name = NewUnixName();
    b.AddListeningPort(UnixAddress(me.unix_name), grpc::InsecureServerCredentials());
  }
  j.peer_service = std::make_unique<PeerService>(env.token, &j.mailbox);
  b.RegisterService(j.peer_service.get());
  if (env.rank == 0) {
    j.store_service = std::make_unique<StoreService>(env.token, env.restart);
    b.RegisterService(j.store_service.get());
  }
  j.server = b.BuildAndStart();
  if (!j.server || port == 0)
    return absl::UnavailableError(
        absl::StrCat("rank ", env.rank, ": cannot listen on ", listen,
                     me.unix_name.empty() ? "" : absl::StrCat(" and ", UnixAddress(me.unix_name)),
                     env.rank == 0 ? absl::StrCat(": port ", env.master_port,
                                                  " (MASTER_PORT) is in use, or not allowed")
                                   : ""));
  // (rank 0 of a job made in code with no MASTER_PORT: where its server was put)
  const int master_port = env.rank == 0 && env.master_port == 0 ? port : env.master_port;
  std::string master = absl::StrCat(env.master_addr, ":", master_port);
  StoreClient store(master, env.token, env.timeout, env.restart);
  me.tcp = absl::StrCat(LocalAddressTowards(env.master_addr), ":", port);
  RETURN_IF_ERROR(store.Set(absl::StrCat("addr/", env.rank), me.Encode()));
  std::vector<std::shared_ptr<grpc::Channel>> channels(env.world_size);
  std::vector<std::string> addresses(env.world_size);
  for (int r = 0; r < env.world_size; ++r) {
    absl::StatusOr<std::string> a = store.Get(absl::StrCat("addr/", r));
    if (!a.ok())
      return absl::Status(a.status().code(),
                          absl::StrCat("rendezvous: rank ", r,
                                       " did not join within the timeout: ", a.status().message()));
    absl::StatusOr<PeerAddress> peer = PeerAddress::Decode(*a);
    if (!peer.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("rendezvous: rank ", r, " published ", peer.status().message()));
    if (r != env.rank) channels[r] = ChannelTo(*peer, me.host, &addresses[r]);
  }
  j.transport =
      std::make_unique<Transport>(env.rank, std::move(channels), addresses, env.token, env.timeout,
                                  &j.mailbox, env.shared_memory, env.tcp_link);
  j.worker = std::thread([&j] { j.Loop(); });
  if (absl::Status s = Barrier()->Wait(); !s.ok())
    return absl::Status(s.code(), absl::StrCat("rendezvous: ", s.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ProcessGroup>> ProcessGroup::NewGroup(const std::vector<int>& ranks) {
  if (id_ != 0)
    return absl::FailedPreconditionError(
        "new group: call it on the job's group (every rank of the job makes every group)");
  uint32_t id;
  {
    std::lock_guard<std::mutex> lock(job_->mu);
    id = ++job_->groups;  // the same number on every rank: every rank makes every group
  }
  std::string list = absl::StrJoin(ranks, ", ");
  int index = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= world_size() ||
        std::count(ranks.begin(), ranks.end(), ranks[i]) != 1)
      return absl::InvalidArgumentError(absl::StrCat("new group [", list, "]: ranks are 0..",
                                                     world_size() - 1, ", each at most once"));
    if (ranks[i] == rank()) index = static_cast<int>(i);
  }
  if (ranks.empty()) return absl::InvalidArgumentError("new group: no ranks");
  if (index < 0) return nullptr;
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(job_, id, ranks, index));
}

ProcessGroup::~ProcessGroup() {
  // the group's queued work refers to it: let it run first (the job's thread outlives it)
  if (job_->worker.joinable()) Enqueue("close", [](uint64_t) { return absl::OkStatus(); }, false)->Wait();
}

ProcessGroup::Job::Job(const JobEnv& env) : env(env), mailbox(env.rank, env.world_size) {}

ProcessGroup::Job::~Job() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  cv.notify_all();
  if (worker.joinable()) worker.join();
  if (transport) transport->Close(!failed.empty());
  if (server) server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server.reset();  // its threads are joined before the services they call go away
}

std::shared_ptr<Work> ProcessGroup::Enqueue(std::string what, Run run, bool collective) {
  auto w = std::make_shared<Work>();
  {
    std::lock_guard<std::mutex> lock(job_->mu);
    Job::Queued q{std::move(what), nullptr, w, id_, std::nullopt};
    if (collective) {
      q.collective = next_seq_++;
      absl::StrAppend(&q.what, " (collective #", *q.collective,
                      id_ == 0 ? "" : absl::StrCat(" of group ", id_, " [", absl::StrJoin(ranks_, ", "), "]"),
                      ")");
    }
    q.run = [run = std::move(run), seq = q.collective.value_or(0)] { return run(seq); };
    job_->queue.push_back(std::move(q));
  }
  job_->cv.notify_all();
  return w;
}

void ProcessGroup::Job::Loop() {
  for (;;) {
    Queued q;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !queue.empty() || stopping; });
      if (queue.empty()) return;
      q = std::move(queue.front());
      queue.pop_front();
    }
    if (!failed.empty()) {
      q.work->Finish(absl::FailedPreconditionError(absl::StrCat(
          "rank ", env.rank, ": ", q.what, " not run: the group failed earlier: ", failed)));
      continue;
    }
    const uint64_t sent = transport->payload_bytes_sent();
    trace::Span span("collective", q.what.substr(0, q.what.find(" (collective")), "collectives");
    absl::Status s = q.run();
    // done when its frames are in the kernel: the caller's buffers, which the transport
    // sends from, are free again, and the peers get the frames even if this process exits
    if (s.ok()) s = transport->Flush(std::chrono::steady_clock::now() + env.timeout);
    span.Arg("bytes sent", std::to_string(transport->payload_bytes_sent() - sent));
    span.Arg("group", std::to_string(q.group));
    if (q.collective) mailbox.Forget(q.group, *q.collective);
    q.work->Finish(s.ok() ? s : Fail(q.what, s));
  }
}

char* ProcessGroup::Job::Scratch(int64_t bytes) {
  if (static_cast<size_t>(bytes) > scratch.size()) scratch.resize(bytes);
  return scratch.data();
}

absl::Status ProcessGroup::Job::Fail(const std::string& what, absl::Status why) {
  std::string msg = absl::StrCat("rank ", env.rank, ": ", what, " failed: ", why.message());
  if (failed.empty() && why.code() != absl::StatusCode::kAborted)
    transport->AbortAll(absl::StrCat(what, " failed on rank ", env.rank, ": ", why.message()));
  if (failed.empty()) failed = msg;
  // the streams are cancelled and their sender threads joined: gRPC queues nothing more from
  // the caller's buffers (a socket write already under way at worst fails with EFAULT)
  transport->Close(/*cancel=*/true);
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
    std::lock_guard<std::mutex> lock(job_->mu);
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
    std::lock_guard<std::mutex> lock(job_->mu);
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
    if (*one != world_size())
      return absl::InternalError(absl::StrCat("barrier counted ", *one, " ranks of ", world_size()));
    return absl::OkStatus();
  });
}

}  // namespace uopc
