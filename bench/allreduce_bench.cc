// All-reduce speed of ProcessGroup (the gRPC ring) next to the same ring over raw loopback
// TCP sockets, and next to raw TCP streaming (every rank streaming to its successor at
// once: the ring's ceiling), all measured in the same run by the same processes. Reports
// algbw = bytes / time and busbw = algbw * 2(p-1)/p as nccl-tests define them, for 1 KiB
// to 64 MiB, and the latency of an 8-byte all-reduce.
//   bazel run -c opt //bench:allreduce_bench              # p = 2, then p = 4
//   bazel run -c opt //bench:allreduce_bench -- --nproc 3
// Run without RANK in the environment, it starts itself under uopc_launch.
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

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
/// segment is on the wire while the next one is reduced (as in the gRPC ring).
class TcpRing {
 public:
  TcpRing(ProcessGroup& g) : p_(g.world_size()), r_(g.rank()) {
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(lfd, 1) != 0 ||
        getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      Die("listen");
    const JobEnv& e = g.env();
    StoreClient store(absl::StrCat(e.master_addr, ":", e.master_port), e.token, e.timeout);
    if (!store.Set(absl::StrCat("tcp/", r_), std::to_string(ntohs(a.sin_port))).ok())
      Die("store set");
    absl::StatusOr<std::string> next = store.Get(absl::StrCat("tcp/", (r_ + 1) % p_));
    if (!next.ok()) Die("store get");
    out_ = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = htons(static_cast<uint16_t>(std::stoi(*next)));
    if (connect(out_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) Die("connect");
    in_ = accept(lfd, nullptr, nullptr);
    close(lfd);
    int one = 1;
    setsockopt(out_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(in_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sender_ = std::thread([this] { Send(); });
  }
  ~TcpRing() {
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
    std::fprintf(stderr, "tcp ring: %s: %s\n", what, std::strerror(errno));
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

TcpRing* g_tcp = nullptr;

void SetRates(benchmark::State& state, int64_t bytes) {
  const int p = g_group->world_size();
  state.counters["algbw"] =
      benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["busbw"] = benchmark::Counter(static_cast<double>(bytes) * 2 * (p - 1) / p,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

void BM_AllReduce_gRPC(benchmark::State& state) {
  const int64_t n = state.range(0) / 4;
  std::vector<float> x(n, 1.0f);
  for (auto _ : state) {
    absl::Status s = g_group->AllReduce(x.data(), n, DType::kF32, ReduceOp::kSum)->Wait();
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
  SetRates(state, n * 4);
}

void BM_AllReduce_TCP(benchmark::State& state) {
  const int64_t n = state.range(0) / 4;
  std::vector<float> x(n, 1.0f);
  for (auto _ : state) g_tcp->AllReduce(x.data(), n);
  SetRates(state, n * 4);
}

/// Raw TCP: every rank streams the bytes a ring all-reduce sends per rank (2(p-1)/p of the
/// tensor) to its successor at once; reported as the busbw such a stream would allow.
void BM_Stream_TCP(benchmark::State& state) {
  const int p = g_group->world_size();
  const int64_t bytes = state.range(0), sent = bytes * 2 * (p - 1) / p / 4 * 4;
  std::vector<char> out(sent, 1), in(sent);
  for (auto _ : state) g_tcp->Stream(out.data(), in.data(), sent);
  SetRates(state, bytes);
}

/// Fixed iterations: every rank must run each benchmark the same number of times.
void Register(const char* name, void (*f)(benchmark::State&), int64_t bytes) {
  benchmark::RegisterBenchmark(name, f)
      ->Arg(bytes)
      ->Iterations(bytes >= (64 << 20)  ? 10
                   : bytes >= (4 << 20) ? 50
                                        : 500)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

void RegisterAll() {
  // size by size, the three side by side: the machine's load drifts less between them
  for (int64_t bytes : {int64_t{1} << 10, int64_t{16} << 10, int64_t{256} << 10, int64_t{4} << 20,
                        int64_t{64} << 20}) {
    Register("AllReduce_gRPC", BM_AllReduce_gRPC, bytes);
    Register("AllReduce_TCP", BM_AllReduce_TCP, bytes);
    Register("Stream_TCP", BM_Stream_TCP, bytes);
  }
  benchmark::RegisterBenchmark("Latency_gRPC", BM_AllReduce_gRPC)
      ->Arg(8)
      ->Iterations(2000)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("Latency_TCP", BM_AllReduce_TCP)
      ->Arg(8)
      ->Iterations(2000)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}

/// Rank 0 prints the usual table, then gRPC's busbw as a fraction of each TCP baseline.
class Reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      std::vector<std::string> parts = absl::StrSplit(r.benchmark_name(), '/');
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if ((median || r.run_type == Run::RT_Iteration) && parts.size() > 1 &&
          parts[0].rfind("Latency", 0) != 0 && r.counters.count("busbw"))
        busbw_[parts[1]][parts[0]] = r.counters.at("busbw");  // the median, when repeated
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf(
        "\nbusbw, GB/s, p = %d: gRPC ring / TCP ring / TCP streams; gRPC as a fraction of each\n",
        g_group->world_size());
    for (auto& [size, by] : busbw_) {
      double g = by["AllReduce_gRPC"] / 1e9, t = by["AllReduce_TCP"] / 1e9,
             s = by["Stream_TCP"] / 1e9;
      std::printf("%10s bytes: %6.3f / %6.3f / %6.3f   %.2f of TCP ring, %.2f of TCP streams\n",
                  size.c_str(), g, t, s, g / t, g / s);
    }
  }

 private:
  std::map<std::string, std::map<std::string, double>> busbw_;
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
          "All-reduce algbw/busbw of the gRPC ring next to a raw-TCP ring and raw TCP streams, 1 "
          "KiB to "
          "64 MiB,\nand 8-byte latency; with no --nproc, for 2 and then 4 ranks. Each is repeated "
          "5 "
          "times\n(--benchmark_repetitions=N to change) and the medians are compared.\n");
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
  TcpRing tcp(**group);
  g_tcp = &tcp;
  RegisterAll();
  // repeated (the machine is noisy), medians reported, unless the flags say otherwise
  std::vector<char*> args(argv, argv + argc);
  std::string reps = "--benchmark_repetitions=5",
              aggregates = "--benchmark_report_aggregates_only=true";
  bool repeated = false;
  for (int i = 1; i < argc; ++i)
    repeated |= std::string(argv[i]).rfind("--benchmark_repetitions", 0) == 0;
  if (!repeated) args.insert(args.begin() + 1, {reps.data(), aggregates.data()});
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
