// uopc_launch: starts the ranks of a job on this node, each with torchrun's environment
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and the job
// token (UOPC_JOB_TOKEN), prefixes every line they print with their rank, and when one
// fails, gives the others a moment to report their side, stops them, and exits with the
// failing rank's status, or (--max-restarts) starts the job again, as torchrun does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

#include "core/parse_number.h"
#include "core/trace.h"

namespace {

constexpr const char* kUsage = R"(usage: uopc_launch --nproc N [options] -- PROGRAM [ARGS...]

Starts N ranks of PROGRAM on this node with the environment of a uopc (or torchrun) job:
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, UOPC_JOB_TOKEN.
Every output line is prefixed with "[rank R] ". When a rank fails, the others get --grace
seconds to report, are then stopped (SIGTERM, then SIGKILL a second later), and uopc_launch
exits with the failing rank's status (128 + signal if it was killed). The ranks die with
uopc_launch, however it ends (even by SIGKILL). A --master-port in use is refused at once.

options:
  --nproc N          ranks on this node (required)
  --nnodes M         nodes in the job (default 1); with M > 1, --master-addr,
                     --master-port and UOPC_JOB_TOKEN (the same on every node) are needed
  --node-rank K      this node's index, 0..M-1 (default 0); node 0 hosts rank 0
  --master-addr A    the address of rank 0's node (default 127.0.0.1)
  --master-port P    the port of rank 0's rendezvous store (default: a free port)
  --bind cores|none  cores (the default): each rank runs on its own share of this node's
                     cores (those uopc_launch may use, in order), where there is a core a
                     rank at least, so that its threads and caches stay there; none: the
                     ranks run on any of them. Two jobs on one node: start each under
                     taskset on cores of its own (taskset -c 0-7 uopc_launch ...), or
                     give them --bind none
  --grace S          seconds a failed job's other ranks get before they are stopped (default 5)
  --max-restarts N   when a rank fails, stop the others and start the job again, up to N
                     times (default 0), each restart printed with its cause; the ranks see
                     UOPC_RESTART_COUNT (and torchrun's TORCHELASTIC_RESTART_COUNT). The
                     program resumes from its last checkpoint (gpt_train --resume-if-present:
                     one command line for the first start and every restart). With several
                     nodes, give each the same N: each restarts its own ranks
  --help             this text

Each rank's CPU kernels run on UOPC_THREADS threads: its share of the node's cores (at
least 1), unless UOPC_THREADS is set. The job's timeout is UOPC_TIMEOUT
(seconds, default 600), read by the ranks. With
UOPC_TRACE=FILE, each rank writes its trace to FILE.rank<R>, and uopc_launch merges those
of this node into FILE when the job ends (one process per rank in the trace viewer).
)";

int Usage(const std::string& error) {
  std::fprintf(stderr, "uopc_launch: %s\n\n%s", error.c_str(), kUsage);
  return 2;
}

// Whether a listening socket could take `port` now: with SO_REUSEADDR (a port of a job
// that just ended, in TIME_WAIT, is free) and without SO_REUSEPORT (a port another program
// listens on, with SO_REUSEPORT or not, is not).
bool PortIsFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;  // let the rank find out
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(fd, 1) == 0;
  close(fd);
  return free;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

std::string FreshToken() {
  unsigned char bytes[16] = {};
  FILE* f = std::fopen("/dev/urandom", "rb");
  if (f) {
    if (std::fread(bytes, 1, sizeof bytes, f) != sizeof bytes) std::memset(bytes, 0, sizeof bytes);
    std::fclose(f);
  }
  std::string out;
  for (unsigned char b : bytes) absl::StrAppend(&out, absl::Hex(b, absl::kZeroPad2));
  return out;
}

volatile sig_atomic_t g_signal = 0;
void OnSignal(int sig) { g_signal = sig; }

struct Rank {
  int rank;
  pid_t pid = -1;
  int status = -1;        // -1 while running; else the exit code (128 + signal when killed)
  int fds[2] = {-1, -1};  // stdout, stderr
  std::string partial[2];
};

/// Writes complete lines of `data` to `out`, each prefixed; keeps the rest in `partial`.
void Emit(Rank& r, int which, const char* data, size_t n, bool flush) {
  std::string& buf = r.partial[which];
  buf.append(data, n);
  FILE* out = which == 0 ? stdout : stderr;
  size_t start = 0;
  for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1)
    std::fprintf(out, "[rank %d] %.*s\n", r.rank, static_cast<int>(nl - start), buf.data() + start);
  buf.erase(0, start);
  if (flush && !buf.empty()) {
    std::fprintf(out, "[rank %d] %s\n", r.rank, buf.c_str());
    buf.clear();
  }
  std::fflush(out);
}

void Signal(std::vector<Rank>& ranks, int sig) {
  for (Rank& r : ranks)
    if (r.status < 0 && r.pid > 0) {
      kill(-r.pid, sig);                       // the rank's process group
      if (sig == SIGTERM) kill(-r.pid, SIGCONT);  // a stopped rank acts on it at once
    }
}

// How one start of the job ended: its status (the failing rank's, 128 + the signal that
// stopped the job, or 0) and the failing rank (-1: none).
struct Outcome {
  int status = 0;
  int failed_rank = -1;
};

struct Job {
  int nproc, nnodes, node_rank, master_port, threads_per_rank;
  std::vector<cpu_set_t> cores;  // each local rank's (--bind cores), or none
  double grace;
  std::string master_addr, job_token;
  pid_t launcher;
  char** argv;  // the program and its arguments, null-terminated
};

// Starts the job's ranks on this node (the `restart`th time) and runs them to the end: when
// one fails, the others get the grace to report and are stopped.
Outcome Attempt(const Job& job, int restart) {
  const int nproc = job.nproc, nnodes = job.nnodes, node_rank = job.node_rank,
            master_port = job.master_port, threads_per_rank = job.threads_per_rank;
  const double grace = job.grace;
  const std::string& master_addr = job.master_addr;
  const std::string& job_token = job.job_token;
  const pid_t launcher = job.launcher;
  char** argv = job.argv;
  std::vector<Rank> ranks(nproc);
  for (int l = 0; l < nproc; ++l) {
    Rank& r = ranks[l];
    r.rank = node_rank * nproc + l;
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) {
      std::perror("uopc_launch: pipe");
      Signal(ranks, SIGKILL);
      return {1, -1};
    }
    pid_t pid = fork();
    if (pid == 0) {
      // a rank dies with its launcher, even a launcher killed by SIGKILL
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher) _exit(1);  // it died before the line above
      setpgid(0, 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      close(out[0]), close(out[1]), close(err[0]), close(err[1]);
      auto set = [](const char* k, const std::string& v) { setenv(k, v.c_str(), 1); };
      set("RANK", std::to_string(r.rank));
      set("WORLD_SIZE", std::to_string(nnodes * nproc));
      set("LOCAL_RANK", std::to_string(l));
      set("LOCAL_WORLD_SIZE", std::to_string(nproc));
      set("MASTER_ADDR", master_addr);
      set("MASTER_PORT", std::to_string(master_port));
      set("UOPC_JOB_TOKEN", job_token);
      set("UOPC_RESTART_COUNT", std::to_string(restart));
      set("TORCHELASTIC_RESTART_COUNT", std::to_string(restart));
      int threads = threads_per_rank;
      if (!job.cores.empty()) {  // (a rank that cannot be bound runs where it may)
        sched_setaffinity(0, sizeof(cpu_set_t), &job.cores[l]);
        threads = CPU_COUNT(&job.cores[l]);
      }
      if (!std::getenv("UOPC_THREADS")) set("UOPC_THREADS", std::to_string(threads));
      execvp(argv[0], argv);
      std::fprintf(stderr, "uopc_launch: cannot run %s: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    if (pid < 0) {
      std::perror("uopc_launch: fork");
      Signal(ranks, SIGKILL);
      return {1, -1};
    }
    setpgid(pid, pid);
    r.pid = pid;
    r.fds[0] = out[0], r.fds[1] = err[0];
    close(out[1]), close(err[1]);
  }

  using Clock = std::chrono::steady_clock;
  int failed = -1;            // the first failing rank's index
  Clock::time_point stop_at;  // when the others are stopped, after a failure
  int stage = 0;              // 0: running; 1: a failure, waiting; 2: SIGTERM sent; 3: SIGKILL sent
  int running = nproc;
  Clock::time_point all_exited;
  for (;;) {
    std::vector<pollfd> pfds;
    std::vector<std::pair<int, int>> who;
    for (int l = 0; l < nproc; ++l)
      for (int w = 0; w < 2; ++w)
        if (ranks[l].fds[w] >= 0) {
          pfds.push_back({ranks[l].fds[w], POLLIN, 0});
          who.push_back({l, w});
        }
    if (running == 0 && (pfds.empty() || Clock::now() - all_exited > std::chrono::seconds(1)))
      break;
    poll(pfds.data(), pfds.size(), 50);
    for (size_t k = 0; k < pfds.size(); ++k) {
      if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto [l, w] = who[k];
      char buf[65536];
      ssize_t n = read(pfds[k].fd, buf, sizeof buf);
      if (n > 0) {
        Emit(ranks[l], w, buf, n, false);
      } else if (n == 0 || errno != EINTR) {
        Emit(ranks[l], w, "", 0, true);
        close(ranks[l].fds[w]);
        ranks[l].fds[w] = -1;
      }
    }
    // Ranks that ended since the last look. Of those that failed together, one killed by a
    // signal is named first: the others most often failed because it died (waitpid gives
    // the oldest child first, whatever the order they ended in).
    std::vector<std::pair<int, int>> ended;  // (rank's index, wait status)
    for (int status; true;) {
      const pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      for (int l = 0; l < nproc; ++l)
        if (ranks[l].pid == pid) ended.push_back({l, status});
    }
    std::stable_partition(ended.begin(), ended.end(),
                          [](const std::pair<int, int>& e) { return WIFSIGNALED(e.second); });
    for (auto [l, status] : ended) {
      Rank& r = ranks[l];
      r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (--running == 0) all_exited = Clock::now();
      if (stage >= 2 && WIFSIGNALED(status))
        std::fprintf(stderr, "uopc_launch: rank %d stopped by signal %d (%s)\n", r.rank,
                     WTERMSIG(status), strsignal(WTERMSIG(status)));
      if (r.status != 0 && failed < 0 && stage == 0) {
        failed = l;
        if (WIFEXITED(status))
          std::fprintf(stderr, "uopc_launch: rank %d exited with status %d\n", r.rank, r.status);
        else
          std::fprintf(stderr, "uopc_launch: rank %d was killed by signal %d (%s)\n", r.rank,
                       WTERMSIG(status), strsignal(WTERMSIG(status)));
        stage = 1;
        stop_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace * 1000));
      }
    }
    if (g_signal && stage < 2) {
      std::fprintf(stderr, "uopc_launch: %s: stopping the job\n", strsignal(g_signal));
      Signal(ranks, SIGTERM);
      stage = 2;
      stop_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace * 1000));
    } else if (stage >= 1 && stage < 3 && running > 0 && Clock::now() >= stop_at) {
      if (stage == 1)
        std::fprintf(stderr, "uopc_launch: stopping the %d rank(s) still running\n", running);
      Signal(ranks, stage == 1 ? SIGTERM : SIGKILL);
      ++stage;
      stop_at = Clock::now() + std::chrono::seconds(1);  // the grace was given already
    }
  }
  if (failed >= 0) return {ranks[failed].status, ranks[failed].rank};
  return {g_signal ? 128 + g_signal : 0, -1};
}

}  // namespace

int main(int argc, char** argv) {
  int nproc = 0, nnodes = 1, node_rank = 0, master_port = 0, max_restarts = 0;
  double grace = 5;
  bool bind_cores = true;
  std::string master_addr = "127.0.0.1";
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) return Usage(absl::StrCat("unknown or incomplete option ", a));
    const char* v = argv[++i];
    auto number = [&](int* out, int64_t lo, int64_t hi) {
      absl::StatusOr<int64_t> n = uopc::ParseInt(a, v, lo, hi);
      if (n.ok()) *out = static_cast<int>(*n);
      return n.status();
    };
    absl::Status s;
    if (a == "--nproc") {
      s = number(&nproc, 1, 4096);
    } else if (a == "--nnodes") {
      s = number(&nnodes, 1, 65536);
    } else if (a == "--node-rank") {
      s = number(&node_rank, 0, 65535);
    } else if (a == "--master-addr") {
      master_addr = v;
    } else if (a == "--master-port") {
      s = number(&master_port, 1, 65535);
    } else if (a == "--max-restarts") {
      s = number(&max_restarts, 0, 1000000);
    } else if (a == "--bind") {
      if (std::string(v) != "cores" && std::string(v) != "none")
        return Usage(absl::StrCat("--bind ", v, ": expected cores or none"));
      bind_cores = std::string(v) == "cores";
    } else if (a == "--grace") {
      absl::StatusOr<double> g = uopc::ParseReal(a, v, 0, 3600);
      if (g.ok()) grace = *g;
      s = g.status();
    } else {
      return Usage(absl::StrCat("unknown option ", a));
    }
    if (!s.ok()) return Usage(std::string(s.message()));
  }
  if (nproc == 0) return Usage("--nproc is required");
  if (i >= argc) return Usage("no program: put it after --");
  if (node_rank >= nnodes)
    return Usage(absl::StrCat("--node-rank ", node_rank, " is not below --nnodes ", nnodes));
  const char* token = std::getenv("UOPC_JOB_TOKEN");
  std::string job_token = token && *token ? token : "";
  if (nnodes > 1 && (master_port == 0 || job_token.empty()))
    return Usage(
        "with --nnodes > 1, give --master-addr and --master-port, and set UOPC_JOB_TOKEN to one "
        "secret on every node");
  if (job_token.empty()) job_token = FreshToken();
  const bool auto_port = master_port == 0;
  if (master_port == 0 && (master_port = FreePort()) == 0) {
    std::fprintf(stderr, "uopc_launch: cannot find a free port: %s\n", std::strerror(errno));
    return 1;
  }
  if (node_rank == 0 && !PortIsFree(master_port)) {  // rank 0's store listens there
    std::fprintf(stderr,
                 "uopc_launch: port %d is in use (by another job or program): choose another "
                 "--master-port, or leave it out for a free one\n",
                 master_port);
    return 1;
  }

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // the node's cores, shared among its ranks (as torchrun's OMP_NUM_THREADS), and with
  // --bind cores each rank's own (where there are enough: a rank per core at least)
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  Job job{nproc,       nnodes,    node_rank, master_port, std::max(1, cores / nproc), {}, grace,
          master_addr, job_token, getpid(),  argv + i};
  if (bind_cores && cores >= nproc && nproc > 1) {
    std::vector<int> ids;
    for (int c = 0; c < CPU_SETSIZE && static_cast<int>(ids.size()) < cores; ++c)
      if (CPU_ISSET(c, &cpus)) ids.push_back(c);
    job.cores.resize(nproc);
    for (int l = 0; l < nproc; ++l) {
      CPU_ZERO(&job.cores[l]);
      for (int k = cores * l / nproc; k < cores * (l + 1) / nproc; ++k)
        CPU_SET(ids[k], &job.cores[l]);
    }
  }
  Outcome o;
  for (int restart = 0;; ++restart) {
    o = Attempt(job, restart);
    if (o.status == 0 || g_signal) break;
    if (restart == max_restarts) {
      if (max_restarts > 0)
        std::fprintf(stderr, "uopc_launch: rank %d failed after %d restart(s); giving up\n",
                     o.failed_rank, max_restarts);
      break;
    }
    std::fprintf(stderr, "uopc_launch: restarting the job (restart %d of %d: rank %d failed)\n",
                 restart + 1, max_restarts, o.failed_rank);
    if (auto_port && node_rank == 0) {  // (a port of its own: the last may linger)
      const int port = FreePort();
      if (port != 0) job.master_port = port;
    }
  }
  // UOPC_TRACE: the ranks of this node wrote FILE.rank<R>; they become FILE
  if (const char* trace = std::getenv("UOPC_TRACE"); trace && *trace && nnodes * nproc > 1) {
    absl::Status s = uopc::trace::MergeRankFiles(trace, nnodes * nproc);
    if (s.ok())
      std::fprintf(stderr, "uopc_launch: the trace of the ranks is in %s\n", trace);
    else if (s.code() != absl::StatusCode::kNotFound)
      std::fprintf(stderr, "uopc_launch: UOPC_TRACE: %s\n", std::string(s.message()).c_str());
  }
  return o.status;
}
