// ProcessGroup: the ranks of a job and the collectives between them. Created from the
// environment (job_env.h): every rank starts a gRPC server on a free port (rank 0 also
// hosts the rendezvous store at MASTER_ADDR:MASTER_PORT), publishes its address, learns
// the others' (peer_address.h: ranks on one host talk through unix sockets), and checks
// with a barrier that the ring is up.
//
// Collectives run in call order on one communication thread and return a Work to wait on,
// so communication overlaps compute; the buffers must stay valid until the Work is done
// (they are sent from, not copied). A done Work's frames have left the process.
// The all-reduce is the bandwidth-optimal ring (reduce-scatter then all-gather, 2(p-1)
// steps of N/p elements), in segments of 256 KiB to 4 MiB pipelined so that sending one
// overlaps reducing the next; segments go out from the caller's memory, uncopied. Results are
// bit-identical from run to run and on every rank. f16 and bf16 travel as themselves and
// are summed in f32 on each rank (partial sums rounded as they are passed on). Every wait
// has the job's timeout; a rank that dies, stalls, sends garbage or calls another collective makes
// the others fail with a message that names it, and a failing rank tells every peer, so that nobody
// waits out the timeout for nothing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

#include "core/dtype.h"
#include "distributed/job_env.h"
#include "distributed/mailbox.h"
#include "distributed/transport.h"

namespace grpc {
class Server;
}

namespace uopc {

enum class ReduceOp { kSum, kAvg, kMax, kMin };

/// A collective in flight.
class Work {
 public:
  /// Blocks until the collective is done; its status.
  absl::Status Wait();
  bool Done();

 private:
  friend class ProcessGroup;
  void Finish(absl::Status s);
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  absl::Status status_;
};

class ProcessGroup {
 public:
  /// Joins the job described by `env` (blocks until every rank has joined, or the timeout):
  /// the group of all its ranks.
  static absl::StatusOr<std::unique_ptr<ProcessGroup>> Create(const JobEnv& env);
  /// (A group's queued work runs before it goes; the job's connections close with its last group.)
  ~ProcessGroup();

  /// This rank in the group (0..world_size()-1), and the group's size.
  int rank() const { return index_; }
  int world_size() const { return static_cast<int>(ranks_.size()); }
  /// The job's rank of each rank of the group.
  const std::vector<int>& ranks() const { return ranks_; }
  const JobEnv& env() const { return job_->env; }
  /// Where this rank reaches rank `r` of the group: "unix-abstract:NAME" on this host, else "host:port".
  const std::string& address_of(int r) const { return job_->transport->address(ranks_[r]); }

  /// A group of some of the job's ranks (given as job ranks; in that order they are the
  /// group's ranks 0, 1, ...), over the job's connections: its collectives and messages never
  /// mix with another group's. As torch.distributed.new_group: every rank of the job calls
  /// it on the job's group, for the same ranks, in the same order; a rank not among them
  /// gets null.
  absl::StatusOr<std::unique_ptr<ProcessGroup>> NewGroup(const std::vector<int>& ranks);

  /// In place: `data` (count elements of dtype) becomes the reduction over all ranks.
  std::shared_ptr<Work> AllReduce(void* data, int64_t count, DType dtype, ReduceOp op);
  /// `in` holds world_size chunks of count elements; `out` gets the reduction of chunk rank().
  std::shared_ptr<Work> ReduceScatter(const void* in, void* out, int64_t count, DType dtype,
                                      ReduceOp op);
  /// `in` holds count elements; `out` gets world_size * count: rank r's at chunk r.
  std::shared_ptr<Work> AllGather(const void* in, void* out, int64_t count, DType dtype);
  /// `data` on every rank becomes root's.
  std::shared_ptr<Work> Broadcast(void* data, int64_t count, DType dtype, int root);
  /// To rank `to`; matched with its Recv of the same tag, in order.
  std::shared_ptr<Work> Send(const void* data, int64_t count, DType dtype, int to, int tag = 0);
  std::shared_ptr<Work> Recv(void* data, int64_t count, DType dtype, int from, int tag = 0);
  /// Every rank has reached it.
  std::shared_ptr<Work> Barrier();
  /// Payload bytes this rank has sent, over all groups of the job (segments of tensors;
  /// not gRPC's framing).
  uint64_t bytes_sent() const { return job_->transport->payload_bytes_sent(); }
  /// Of them, those that went through shared memory (to ranks on this host).
  uint64_t shared_bytes_sent() const { return job_->transport->shared_bytes_sent(); }
  /// Of them, those that went through TCP links (to ranks on other hosts).
  uint64_t tcp_link_bytes_sent() const { return job_->transport->tcp_link_bytes_sent(); }

 private:
  /// What the groups of one job share: the server, the connections, the mailbox, and the
  /// one communication thread that runs every group's work in the order it was queued.
  struct Job {
    explicit Job(const JobEnv& env);
    ~Job();
    void Loop();
    /// Working memory for one collective, kept for the next: the transport sends from it
    /// until the collective's frames are flushed (so it must outlive the collective).
    char* Scratch(int64_t bytes);
    /// Fails the collective here and tells every peer; later collectives fail at once.
    absl::Status Fail(const std::string& what, absl::Status why);

    JobEnv env;
    Mailbox mailbox;
    std::unique_ptr<grpc::Server> server;
    std::unique_ptr<class StoreService> store_service;
    std::unique_ptr<class PeerService> peer_service;
    std::unique_ptr<Transport> transport;

    std::mutex mu;
    std::condition_variable cv;
    struct Queued {
      std::string what;
      std::function<absl::Status()> run;
      std::shared_ptr<Work> work;
      uint32_t group = 0;
      std::optional<uint64_t> collective;  // its sequence number in its group
    };
    std::deque<Queued> queue;
    bool stopping = false;
    std::string failed;  // the first failure: the job's groups are unusable after it
    std::vector<char> scratch;
    uint32_t groups = 0;  // made by NewGroup
    std::thread worker;
  };

  ProcessGroup(std::shared_ptr<Job> job, uint32_t id, std::vector<int> ranks, int index)
      : job_(std::move(job)), id_(id), ranks_(std::move(ranks)), index_(index) {}
  absl::Status Start();
  using Run = std::function<absl::Status(uint64_t seq)>;
  /// Queues an operation; collectives (not send and recv, which only two ranks see) take
  /// the group's next collective sequence number.
  std::shared_ptr<Work> Enqueue(std::string what, Run run, bool collective = true);

  // the algorithms (collectives.cc)
  struct Call;
  absl::Status RingReduceScatter(Call& c, void* work, DType work_dtype, void* stage, DType wire,
                                 int64_t total, ReduceOp op);
  absl::Status DirectAllReduce(Call& c, void* data, DType work_dtype, ReduceOp op);
  absl::Status RingAllGather(Call& c, void* data, DType wire, int64_t total, uint32_t first_step);
  absl::Status DoAllReduce(uint64_t seq, void* data, int64_t count, DType dtype, ReduceOp op,
                           const char* name);
  absl::Status DoReduceScatter(uint64_t seq, const void* in, void* out, int64_t count, DType dtype,
                               ReduceOp op);
  absl::Status DoAllGather(uint64_t seq, const void* in, void* out, int64_t count, DType dtype);
  absl::Status DoBroadcast(uint64_t seq, void* data, int64_t count, DType dtype, int root);
  absl::Status DoSend(uint64_t seq, const void* data, int64_t count, DType dtype, int to, int tag);
  absl::Status DoRecv(uint64_t seq, void* data, int64_t count, DType dtype, int from, int tag);

  std::shared_ptr<Job> job_;
  uint32_t id_ = 0;         // 0: the job's group
  std::vector<int> ranks_;  // the job's rank of each of the group's
  int index_ = 0;           // this rank's place in ranks_
  // under job_->mu
  uint64_t next_seq_ = 0;
  std::map<std::pair<int, int>, uint64_t> p2p_send_, p2p_recv_;  // (peer, tag) -> next sequence
};

}  // namespace uopc
