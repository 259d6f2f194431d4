// fault_proxy: a TCP relay that delays, throttles, stalls or cuts the connections it carries,
// on command: the link between the "nodes" of the distributed tests' network bed
// (net_bed.h), whose kernel has no netem. Each connection accepted on --port is relayed to
// --to HOST:PORT, or, where the bed's router redirected it here (nftables' `redirect`), to the
// address it was sent to (SO_ORIGINAL_DST). Commands come one per line on the --control FIFO:
//
//   delay MS     each byte leaves MS milliseconds after it came (0: none)
//   rate MBPS    each direction of a connection carries at most MBPS megabits a second (0: no limit)
//   stall        nothing is passed on (connections stay open, new ones are accepted)
//   resume       passing on starts again
//   cut          every connection is reset, and new ones too, until `heal`
//   heal         new connections are relayed again
//
// It prints "fault_proxy: ready" once it listens and obeys, and one line for each command.
#include <atomic>
#include <chrono>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

// What every connection obeys, changed by the control thread.
struct Faults {
  std::mutex mu;
  std::condition_variable changed;
  int delay_ms = 0;
  double rate_mbps = 0;
  bool stalled = false, cut = false;
  uint64_t generation = 0;  // bumped by `cut`: connections older than it close
};
Faults g_faults;

// One direction of a connection: a reader queues what it gets, stamped with its arrival;
// a writer passes each chunk on once its delay is over, at most at the rate, never while
// stalled.
struct Pipe {
  int from, to;
  std::mutex mu;
  std::condition_variable ready;
  std::deque<std::pair<Clock::time_point, std::string>> chunks;
  bool eof = false;
};

void Reset(int fd) {
  linger l{1, 0};  // an RST, as a cut link's peer eventually sees
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  shutdown(fd, SHUT_RDWR);
}

void Read(Pipe& p) {
  char buf[64 << 10];
  for (;;) {
    const ssize_t n = read(p.from, buf, sizeof buf);
    std::lock_guard<std::mutex> lock(p.mu);
    if (n <= 0) {
      p.eof = true;
      p.ready.notify_all();
      return;
    }
    p.chunks.emplace_back(Clock::now(), std::string(buf, n));
    p.ready.notify_all();
  }
}

void Write(Pipe& p, uint64_t generation) {
  for (;;) {
    std::pair<Clock::time_point, std::string> chunk;
    {
      std::unique_lock<std::mutex> lock(p.mu);
      p.ready.wait(lock, [&] { return !p.chunks.empty() || p.eof; });
      if (p.chunks.empty()) break;
      chunk = std::move(p.chunks.front());
      p.chunks.pop_front();
    }
    int delay_ms;
    double rate;
    {
      std::unique_lock<std::mutex> lock(g_faults.mu);
      g_faults.changed.wait(lock, [&] { return !g_faults.stalled || g_faults.generation != generation; });
      if (g_faults.generation != generation) break;
      delay_ms = g_faults.delay_ms;
      rate = g_faults.rate_mbps;
    }
    std::this_thread::sleep_until(chunk.first + std::chrono::milliseconds(delay_ms));
    const Clock::time_point start = Clock::now();
    for (size_t at = 0; at < chunk.second.size();) {
      const ssize_t n = send(p.to, chunk.second.data() + at, chunk.second.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return Reset(p.from);
      at += n;
    }
    if (rate > 0)
      std::this_thread::sleep_until(
          start + std::chrono::duration<double>(chunk.second.size() * 8 / (rate * 1e6)));
  }
  shutdown(p.to, SHUT_WR);
}

void Relay(int a, int b) {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(g_faults.mu);
    generation = g_faults.generation;
  }
  for (int fd : {a, b}) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  Pipe ab{a, b}, ba{b, a};
  std::thread readers[] = {std::thread(Read, std::ref(ab)), std::thread(Read, std::ref(ba))};
  std::thread writers[] = {std::thread(Write, std::ref(ab), generation),
                           std::thread(Write, std::ref(ba), generation)};
  // a cut resets both ends at once
  std::thread watch([&] {
    std::unique_lock<std::mutex> lock(g_faults.mu);
    g_faults.changed.wait(lock, [&] {
      std::lock_guard<std::mutex> l1(ab.mu), l2(ba.mu);
      return g_faults.generation != generation || (ab.eof && ba.eof);
    });
    if (g_faults.generation != generation) {
      Reset(a);
      Reset(b);
    }
  });
  for (std::thread& t : writers) t.join();
  for (int fd : {a, b}) shutdown(fd, SHUT_RDWR);
  for (std::thread& t : readers) t.join();
  {
    std::lock_guard<std::mutex> lock(g_faults.mu);
    {
      std::lock_guard<std::mutex> l1(ab.mu), l2(ba.mu);
      ab.eof = ba.eof = true;
    }
    g_faults.changed.notify_all();
  }
  watch.join();
  close(a);
  close(b);
}

bool ParseAddress(const std::string& s, sockaddr_in* out) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  *out = {};
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<uint16_t>(std::atoi(s.c_str() + colon + 1)));
  return inet_pton(AF_INET, s.substr(0, colon).c_str(), &out->sin_addr) == 1;
}

void Serve(int client, const std::string& to) {
  sockaddr_in dest{};
  socklen_t len = sizeof dest;
  if (to.empty() ? getsockopt(client, SOL_IP, SO_ORIGINAL_DST, &dest, &len) != 0
                 : !ParseAddress(to, &dest)) {
    Reset(client);
    close(client);
    return;
  }
  const int server = socket(AF_INET, SOCK_STREAM, 0);
  if (server < 0 || connect(server, reinterpret_cast<sockaddr*>(&dest), sizeof dest) != 0) {
    Reset(client);  // as an unreachable peer looks
    close(client);
    if (server >= 0) close(server);
    return;
  }
  Relay(client, server);
}

void Control(int fd) {
  std::string line;
  for (char c; read(fd, &c, 1) == 1;) {
    if (c != '\n') {
      line += c;
      continue;
    }
    char word[16] = {};
    double value = 0;
    const int got = std::sscanf(line.c_str(), "%15s %lf", word, &value);
    const std::string w = got >= 1 ? word : "";
    {
      std::lock_guard<std::mutex> lock(g_faults.mu);
      if (w == "delay" && got == 2 && value >= 0) g_faults.delay_ms = static_cast<int>(value);
      else if (w == "rate" && got == 2 && value >= 0) g_faults.rate_mbps = value;
      else if (w == "stall") g_faults.stalled = true;
      else if (w == "resume") g_faults.stalled = false;
      else if (w == "cut") g_faults.cut = true, ++g_faults.generation;
      else if (w == "heal") g_faults.cut = false;
      else {
        std::fprintf(stderr, "fault_proxy: '%s' is not a command (delay MS, rate MBPS, stall, "
                     "resume, cut, heal)\n", line.c_str());
        line.clear();
        continue;
      }
      g_faults.changed.notify_all();
    }
    std::fprintf(stderr, "fault_proxy: %s\n", line.c_str());
    line.clear();
  }
}

int Usage(const char* why) {
  if (why) std::fprintf(stderr, "fault_proxy: %s\n", why);
  std::fprintf(why ? stderr : stdout,
               "usage: fault_proxy --port P --control FIFO [--to HOST:PORT]\n"
               "Relays TCP connections accepted on port P (all addresses) to HOST:PORT, or to\n"
               "where a redirected connection was going; FIFO takes commands, one a line:\n"
               "delay MS, rate MBPS, stall, resume, cut, heal.\n");
  return why ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  int port = -1;
  std::string control, to;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help") return Usage(nullptr);
    if (i + 1 >= argc) return Usage(("no value after " + a).c_str());
    if (a == "--port") port = std::atoi(argv[++i]);
    else if (a == "--control") control = argv[++i];
    else if (a == "--to") to = argv[++i];
    else return Usage(("unknown flag " + a).c_str());
  }
  if (port < 0 || port > 65535 || control.empty()) return Usage("--port and --control are needed");
  if (sockaddr_in check; !to.empty() && !ParseAddress(to, &check))
    return Usage(("--to " + to + " is not IPV4:PORT").c_str());
  std::signal(SIGPIPE, SIG_IGN);  // a peer gone is a closed connection, not the proxy's end
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(listener, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 ||
      listen(listener, 128) != 0) {
    std::fprintf(stderr, "fault_proxy: cannot listen on port %d: %s\n", port, std::strerror(errno));
    return 1;
  }
  // read-write, so that the FIFO never reads as ended between writers
  const int fifo = open(control.c_str(), O_RDWR);
  if (fifo < 0) {
    std::fprintf(stderr, "fault_proxy: cannot open the control FIFO %s: %s\n", control.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::thread(Control, fifo).detach();
  std::fprintf(stderr, "fault_proxy: ready\n");
  for (;;) {
    const int client = accept(listener, nullptr, nullptr);
    if (client < 0) continue;
    bool cut;
    {
      std::lock_guard<std::mutex> lock(g_faults.mu);
      cut = g_faults.cut;
    }
    if (cut) {
      Reset(client);
      close(client);
      continue;
    }
    std::thread(Serve, client, to).detach();
  }
}
