// All-reduce speed of ProcessGroup (the gRPC ring) next to the same ring over raw loopback
// TCP sockets, and next to raw streaming over TCP and over unix sockets (every rank
// streaming to its successor at once: the ring's ceiling), all measured in the same run by
// the same processes, interleaved iteration by iteration. Reports
// algbw = bytes / time and busbw = algbw * 2(p-1)/p as nccl-tests define them, for 1 KiB
// to 64 MiB, and the latency of an 8-byte all-reduce.
//   bazel run -c opt //bench:allreduce_bench              # p = 2, then p = 4
//   bazel run -c opt //bench:allreduce_bench -- --nproc 3
// Run without RANK in the environment, it starts itself under uopc_launch.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "distributed/peer_address.h"
#include "distributed/process_group.h"
#include "distributed/store.h"

namespace uopc {
namespace {

ProcessGroup* g_group = nullptr;

// ---- the same ring over plain TCP sockets ----

bool WriteAll(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k <= 0) return false;
    p += k, n -= k;
  }
  return true;
}

bool ReadAll(int fd, char* p, size_t n) {
  while (n) {
    ssize_t k = read(fd, p, n);
    if (k <= 0) return false;
    p += k, n -= k;
  }
  return true;
}

/// A socket to the next rank and one from the previous, with a sender thread, so that a
/// segment is on the wire while the next one is reduced (as in the gRPC ring): over
/// loopback TCP (AF_INET), or over abstract unix sockets (AF_UNIX) with the send buffer the
/// gRPC transport asks for.
class SocketRing {
 public:
  SocketRing(ProcessGroup& g, int family) : p_(g.world_size()), r_(g.rank()) {
    sockaddr_storage a{};
    socklen_t len;
    int lfd = socket(family, SOCK_STREAM, 0);
    const JobEnv& e = g.env();
    if (family == AF_INET) {  // at the address the group's own server has
      auto* in = reinterpret_cast<sockaddr_in*>(&a);
      in->sin_family = AF_INET;
      inet_pton(AF_INET, LocalAddressTowards(e.master_addr).c_str(), &in->sin_addr);
      len = sizeof *in;
    } else {
      a.ss_family = AF_UNIX;
      len = sizeof(sa_family_t);  // the kernel picks an abstract name
    }
    if (bind(lfd, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(lfd, 1) != 0 ||
        (len = sizeof a, getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len)) != 0)
      Die("listen");
    StoreClient store(absl::StrCat(e.master_addr, ":", e.master_port), e.token, e.timeout,
                      e.restart);
    const std::string key = family == AF_INET ? "tcp/" : "unix/";
    if (!store.Set(absl::StrCat(key, r_), std::string(reinterpret_cast<char*>(&a), len)).ok())
      Die("store set");
    absl::StatusOr<std::string> next = store.Get(absl::StrCat(key, (r_ + 1) % p_));
    if (!next.ok()) Die("store get");
    out_ = socket(family, SOCK_STREAM, 0);
    const int one = 1, send_buffer = 4 << 20;
    if (family == AF_INET)
      setsockopt(out_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    else
      setsockopt(out_, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer);
    if (connect(out_, reinterpret_cast<const sockaddr*>(next->data()),
                static_cast<socklen_t>(next->size())) != 0)
      Die("connect");
    in_ = accept(lfd, nullptr, nullptr);
    close(lfd);
    if (family == AF_INET) setsockopt(in_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sender_ = std::thread([this] { Send(); });
  }
  ~SocketRing() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    sender_.join();
    close(out_), close(in_);
  }

  void AllReduce(float* x, int64_t n) {
    const int64_t per = (1 << 20) / 4;
    auto chunk = [&](int c, auto f) {
      c = ((c % p_) + p_) % p_;
      const int64_t b = n * c / p_, e = n * (c + 1) / p_;
      for (int64_t o = b; o < e; o += per) f(o, std::min(per, e - o));
    };
    std::vector<float> seg(per);
    chunk(r_ - 1, [&](int64_t o, int64_t k) { Queue(x + o, k); });
    for (int s = 0; s < p_ - 1; ++s)
      chunk(r_ - s - 2, [&](int64_t o, int64_t k) {
        if (!ReadAll(in_, reinterpret_cast<char*>(seg.data()), k * 4)) Die("read");
        for (int64_t i = 0; i < k; ++i) x[o + i] += seg[i];
        if (s + 1 < p_ - 1) Queue(x + o, k);
      });
    chunk(r_, [&](int64_t o, int64_t k) { Queue(x + o, k); });
    for (int s = 0; s < p_ - 1; ++s)
      chunk(r_ - s - 1, [&](int64_t o, int64_t k) {
        if (!ReadAll(in_, reinterpret_cast<char*>(x + o), k * 4)) Die("read");
        if (s + 1 < p_ - 1) Queue(x + o, k);
      });
    Drain();
  }

  /// Every rank streams `bytes` to its successor while receiving as much from its predecessor.
  void Stream(const char* buf, char* in, int64_t bytes) {
    for (int64_t o = 0; o < bytes; o += 1 << 20)
      Queue(reinterpret_cast<const float*>(buf + o), std::min<int64_t>(1 << 20, bytes - o) / 4);
    if (!ReadAll(in_, in, bytes)) Die("read");
    Drain();
  }

 private:
  static void Die(const char* what) {
    std::fprintf(stderr, "socket ring: %s: %s\n", what, std::strerror(errno));
    std::exit(1);
  }
  void Queue(const float* p, int64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    q_.push_back({reinterpret_cast<const char*>(p), static_cast<size_t>(n * 4)});
    cv_.notify_all();
  }
  void Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return q_.empty() && !busy_; });
  }
  void Send() {
    for (;;) {
      std::pair<const char*, size_t> s;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !q_.empty() || stop_; });
        if (q_.empty()) return;
        s = q_.front();
        q_.pop_front();
        busy_ = true;
      }
      if (!WriteAll(out_, s.first, s.second)) Die("write");
      {
        std::lock_guard<std::mutex> lock(mu_);
        busy_ = false;
      }
      cv_.notify_all();
    }
  }

  int p_, r_, out_ = -1, in_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<const char*, size_t>> q_;
  bool busy_ = false, stop_ = false;
  std::thread sender_;
};

SocketRing *g_tcp = nullptr, *g_unix = nullptr;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0
         : v.size() % 2 ? v[v.size() / 2]
                        : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

/// One iteration runs, in a rotating order and on the same bytes: the gRPC ring, the same
/// ring over raw TCP, and raw streams over TCP and over unix sockets (every rank streaming
/// the 2(p-1)/p of the tensor that a ring sends per rank to its successor, all at once:
/// the ring's ceiling). This machine's speed drifts by tens of percent within seconds, so
/// each ratio is taken within one iteration; the medians over the iterations are reported.
/// The time reported is gRPC's.
void BM_AllReduce(benchmark::State& state) {
  const int p = g_group->world_size();
  const int64_t bytes = state.range(0), n = bytes / 4, streamed = bytes * 2 * (p - 1) / p / 4 * 4;
  std::vector<float> x(n, 1.0f), y(n, 1.0f);
  std::vector<char> out(streamed, 1), in(streamed);
  const double bus = static_cast<double>(bytes) * 2 * (p - 1) / p;
  constexpr int kRuns = 4;
  const int runs = g_unix ? kRuns : kRuns - 1;  // (no unix streams between hosts)
  const std::function<void()> run[kRuns] = {
      [&] {
        absl::Status s = g_group->AllReduce(x.data(), n, DType::kF32, ReduceOp::kSum)->Wait();
        if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
      },
      [&] { g_tcp->AllReduce(y.data(), n); },
      [&] { g_tcp->Stream(out.data(), in.data(), streamed); },
      [&] { g_unix->Stream(out.data(), in.data(), streamed); }};
  std::vector<double> busbw[kRuns], fraction[kRuns];
  int i = 0;
  for (auto _ : state) {
    double t[kRuns];
    for (int k = 0; k < runs; ++k) {
      const int j = (i + k) % runs;
      auto start = std::chrono::steady_clock::now();
      run[j]();
      t[j] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    ++i;
    state.SetIterationTime(t[0]);
    for (int j = 0; j < runs; ++j)
      busbw[j].push_back(bus / t[j]), fraction[j].push_back(t[j] / t[0]);
  }
  const char* names[kRuns] = {"busbw", "tcp_ring", "tcp_streams", "unix_streams"};
  for (int j = 0; j < runs; ++j) {
    state.counters[names[j]] = Median(busbw[j]);
    if (j) state.counters[absl::StrCat("of_", names[j])] = Median(fraction[j]);
  }
  state.counters["algbw"] = Median(busbw[0]) * p / (2 * (p - 1));
}

/// The latency of an 8-byte all-reduce on the gRPC ring next to the same on the raw TCP ring
/// (its sender thread, as the gRPC ring's; at p = 2, a round trip), alternating in blocks of
/// kBlock within each iteration: the time reported is gRPC's, and `of_tcp` the median of
/// the per-iteration ratios.
void BM_Latency(benchmark::State& state) {
  constexpr int kBlock = 20;
  float x = 1.0f, y[2] = {1.0f, 1.0f};
  std::vector<double> grpc_us, tcp_us, ratio;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBlock; ++i)
      if (absl::Status s = g_group->AllReduce(&x, 2, DType::kF32, ReduceOp::kSum)->Wait(); !s.ok())
        return state.SkipWithError(std::string(s.message()).c_str());
    auto mid = std::chrono::steady_clock::now();
    for (int i = 0; i < kBlock; ++i) g_tcp->AllReduce(y, 2);
    auto end = std::chrono::steady_clock::now();
    const double g = std::chrono::duration<double>(mid - start).count(),
                 t = std::chrono::duration<double>(end - mid).count();
    state.SetIterationTime(g / kBlock);
    grpc_us.push_back(g / kBlock * 1e6), tcp_us.push_back(t / kBlock * 1e6), ratio.push_back(g / t);
  }
  state.counters["grpc_us"] = Median(grpc_us);
  state.counters["tcp_us"] = Median(tcp_us);
  state.counters["of_tcp"] = Median(ratio);
}

/// Fixed iterations: every rank must run each benchmark the same number of times.
void RegisterAll() {
  for (int64_t bytes : {int64_t{1} << 10, int64_t{16} << 10, int64_t{256} << 10, int64_t{4} << 20,
                        int64_t{16} << 20, int64_t{64} << 20})
    benchmark::RegisterBenchmark("AllReduce", BM_AllReduce)
        ->Arg(bytes)
        ->Iterations(bytes >= (64 << 20)   ? 30
                     : bytes >= (16 << 20) ? 60
                     : bytes >= (4 << 20)  ? 100
                                           : 1000)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("Latency/8", BM_Latency)
      ->Iterations(100)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

/// How rank 0 reaches its successor: "shared memory", "unix sockets" or "TCP".
std::string Via() {
  const int p = g_group->world_size();
  if (p == 1) return "no peers";
  if (g_group->address_of(1 % p).rfind("unix-abstract:", 0) != 0) return "TCP";
  return g_group->shared_bytes_sent() ? "shared memory" : "unix sockets";
}

/// Rank 0 prints the usual table, then a summary of the busbw figures and ratios.
class Reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Iteration && r.counters.count("of_tcp_streams")) rows_.push_back(r);
      else if (r.run_type == Run::RT_Iteration && r.counters.count("of_tcp"))
        latency_ = r;
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf(
        "\nbusbw, GB/s, p = %d, medians: gRPC ring (%s) / TCP ring / TCP streams / unix streams;"
        "\ngRPC's as a fraction of each (the median of the per-iteration ratios)\n",
        g_group->world_size(), Via().c_str());
    for (const Run& r : rows_) {
      auto c = [&](const char* k) {  // (0: not measured)
        auto it = r.counters.find(k);
        return it == r.counters.end() ? 0.0 : it->second.value;
      };
      std::vector<std::string> name = absl::StrSplit(r.benchmark_name(), '/');
      std::printf("%10s bytes: %6.3f / %6.3f / %6.3f / %6.3f   %.2f / %.2f / %.2f\n",
                  name[1].c_str(), c("busbw") / 1e9, c("tcp_ring") / 1e9, c("tcp_streams") / 1e9,
                  c("unix_streams") / 1e9, c("of_tcp_ring"), c("of_tcp_streams"),
                  c("of_unix_streams"));
    }
    if (latency_)
      std::printf(
          "8-byte all-reduce, medians: gRPC ring %.1f us / TCP ring %.1f us; gRPC's "
          "time %.2fx TCP's (the median of the per-iteration ratios)\n",
          latency_->counters.at("grpc_us").value, latency_->counters.at("tcp_us").value,
          latency_->counters.at("of_tcp").value);
  }

 private:
  std::vector<Run> rows_;
  std::optional<Run> latency_;
};

class Quiet : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

/// Starts this program under uopc_launch, once per --nproc (default: 2 then 4).
int Launch(int argc, char** argv) {
  std::vector<std::string> nprocs, rest;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--nproc" && i + 1 < argc)
      nprocs.push_back(argv[++i]);
    else
      rest.push_back(a);
  }
  if (nprocs.empty()) nprocs = {"2", "4"};
  char self[4096];
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  if (k <= 0) return 1;
  self[k] = 0;
  std::string launcher = std::string(self) + ".runfiles/uopc/distributed/uopc_launch";
  if (access(launcher.c_str(), X_OK) != 0) launcher = "uopc_launch";  // on the PATH
  for (const std::string& n : nprocs) {
    std::string cmd = absl::StrCat(launcher, " --nproc ", n, " -- ", self);
    for (const std::string& a : rest) absl::StrAppend(&cmd, " '", a, "'");
    if (int rc = std::system(cmd.c_str()); rc != 0) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace uopc

int main(int argc, char** argv) {
  using namespace uopc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help") {
      std::printf(
          "usage: allreduce_bench [--nproc N]... [benchmark flags]\n"
          "All-reduce busbw of the gRPC ring next to the same ring over raw TCP, and raw TCP and\n"
          "unix-socket streams, 1 KiB to 64 MiB, interleaved iteration by iteration, and the\n"
          "latency of an 8-byte all-reduce; with no --nproc, for 2 and then 4 ranks.\n"
          "UOPC_UNIX_SOCKETS=0 makes the gRPC ring use TCP between ranks on one host too;\n"
          "UOPC_SHARED_MEMORY=0 sends its frames through the unix socket, not /dev/shm.\n");
      return 0;
    }
  if (!std::getenv("RANK")) return Launch(argc, argv);
  absl::StatusOr<JobEnv> env = JobEnv::FromEnvironment();
  absl::StatusOr<std::unique_ptr<ProcessGroup>> group =
      env.ok() ? ProcessGroup::Create(*env)
               : absl::StatusOr<std::unique_ptr<ProcessGroup>>(env.status());
  if (!group.ok()) {
    std::fprintf(stderr, "%s\n", group.status().ToString().c_str());
    return 1;
  }
  g_group = group->get();
  SocketRing tcp(**group, AF_INET);
  std::optional<SocketRing> unix_sockets;  // where every rank is on this host
  bool one_host = true;
  for (int r = 0; r < g_group->world_size(); ++r)
    one_host &= r == g_group->rank() || g_group->address_of(r).rfind("unix-abstract:", 0) == 0;
  if (one_host) unix_sockets.emplace(**group, AF_UNIX);
  g_tcp = &tcp, g_unix = unix_sockets ? &*unix_sockets : nullptr;
  RegisterAll();
  std::vector<char*> args(argv, argv + argc);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (g_group->rank() == 0) {
    Reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
  } else {
    Quiet quiet;  // the other ranks run the same benchmarks silently
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  return g_group->Barrier()->Wait().ok() ? 0 : 1;
}
