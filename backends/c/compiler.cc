#include "backends/c/compiler.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "core/cache_folder.h"
#include "core/file.h"
#include "core/fnv.h"
#include "core/status_macros.h"

extern char** environ;

namespace uopc {
namespace {

// Source bytes worth a gcc of their own (a kernel is 1-3 KiB; the prelude ~10 KiB).
constexpr size_t kBytesPerCompile = 16 << 10;

// A 128-bit key from two FNV-1a hashes with different bases.
std::string KeyOf(absl::string_view a, absl::string_view b) {
  std::string all = absl::StrCat(a, std::string(1, '\0'), b);
  return Hex64(Fnv1a(all)) + Hex64(Fnv1a(all, 0x9e3779b97f4a7c15ull));
}

std::string CompilerVersion(const std::string& cc) {
  std::string cmd = cc + " -dumpfullversion 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "unknown";
  char buf[128] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  pclose(p);
  std::string v(buf, n);
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  return v.empty() ? "unknown" : v;
}

// Runs argv with `input` on its stdin; its exit status and what it wrote to stderr (through
// pipes: nothing on disk, so a compiler's message survives a broken cache folder).
struct Run {
  int status;
  std::string errors;
};
absl::StatusOr<Run> Spawn(const std::vector<std::string>& argv, absl::string_view input) {
  int in[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return absl::UnavailableError(std::strerror(errno));
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]);
    return absl::UnavailableError(std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]), close(err[1]);
  if (rc != 0) {
    close(in[1]), close(err[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run ", argv[0], ": ", std::strerror(rc)));
  }
  // feed stdin and drain stderr together, so that neither side blocks the other
  Run r{0, ""};
  int to = in[1];
  size_t sent = 0;
  fcntl(to, F_SETFL, O_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);
  for (bool open_err = true; open_err;) {
    pollfd p[2] = {{err[0], POLLIN, 0}, {to, POLLOUT, 0}};
    if (poll(p, to >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) break;
    if (to >= 0 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = write(to, input.data() + sent, input.size() - sent);
      if (n > 0) sent += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == input.size()) {
        close(to);
        to = -1;
      }
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[4096];
      ssize_t n = read(err[0], buf, sizeof buf);
      if (n > 0) r.errors.append(buf, static_cast<size_t>(n));
      if (n == 0 || (n < 0 && errno != EINTR)) open_err = false;
    }
  }
  if (to >= 0) close(to);
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// The CPU that -march=native compiles for: its model and a hash of its feature flags.
std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown cpu", flags;
  while (std::getline(in, line) && (flags.empty() || model == "unknown cpu")) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key(absl::StripAsciiWhitespace(line.substr(0, colon)));
    if (key == "model name")
      model = std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    if (key == "flags") flags = line.substr(colon + 1);
  }
  return absl::StrCat(model, " (flags ", absl::Hex(Fnv1a(flags)), ")");
}

}  // namespace

CCompiler::CCompiler(Options options)
    : options_(std::move(options)), folder_(options_.cache_dir, "c", options_.warn) {
  fingerprint_ = absl::StrCat(options_.cc, " ", CompilerVersion(options_.cc), " ",
                              absl::StrJoin(options_.flags, " "), " on ", CpuModel());
}

std::string CCompiler::cache_dir() {
  absl::StatusOr<std::string> d = folder_.Get();
  return d.ok() ? *d : "";
}

absl::Status CCompiler::RunOne(const std::vector<std::string>& args, absl::string_view source) {
  std::vector<std::string> argv{options_.cc};
  argv.insert(argv.end(), options_.flags.begin(), options_.flags.end());
  argv.insert(argv.end(), args.begin(), args.end());
  ASSIGN_OR_RETURN(Run r, Spawn(argv, source));
  if (r.status == 0) return absl::OkStatus();
  if (r.errors.size() > 2000) r.errors = r.errors.substr(0, 2000) + "...";
  return absl::InternalError(absl::StrCat(options_.cc, " failed (exit ", r.status,
                                          ") on generated C:\n", r.errors));
}

absl::StatusOr<std::string> CCompiler::RunCompiler(absl::string_view prelude,
                                                   const std::vector<absl::string_view>& parts,
                                                   const std::string& dir,
                                                   const std::string& stem) {
  const std::string base = UniqueTemporary(absl::StrCat(dir, "/", stem)), so = base + ".so";
  std::vector<std::string> libs{"-lm"};
  // groups of about equal source, the largest parts first, one per core (a group compiles
  // its own copy of the prelude: worth it past a few kernels)
  size_t total = 0;
  for (absl::string_view p : parts) total += p.size();
  const size_t groups =
      parts.empty() ? 1
                    : std::clamp<size_t>(std::min<size_t>(std::thread::hardware_concurrency(),
                                                          total / kBytesPerCompile),
                                         1, parts.size());
  std::vector<std::string> units(groups, std::string(prelude));
  std::vector<size_t> order(parts.size()), size(groups, 0);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return parts[a].size() > parts[b].size(); });
  for (size_t i : order) {
    const size_t g = std::min_element(size.begin(), size.end()) - size.begin();
    units[g].append(parts[i].data(), parts[i].size());
    size[g] += parts[i].size();
  }
  absl::Status status;
  std::vector<std::string> objects;
  if (groups == 1) {
    std::vector<std::string> args{"-x", "c", "-", "-o", so};
    args.insert(args.end(), libs.begin(), libs.end());
    status = RunOne(args, units[0]);
  } else {
    std::vector<absl::Status> done(groups);
    std::vector<std::thread> compiles;
    for (size_t g = 0; g < groups; ++g) objects.push_back(absl::StrCat(base, ".", g, ".o"));
    for (size_t g = 0; g < groups; ++g) {
      compiles.emplace_back([&, g] {
        done[g] = RunOne({"-c", "-x", "c", "-", "-o", objects[g]}, units[g]);
      });
    }
    for (std::thread& t : compiles) t.join();
    for (const absl::Status& s : done) status.Update(s);
    if (status.ok()) {
      std::vector<std::string> args = objects;
      args.insert(args.end(), {"-o", so});
      args.insert(args.end(), libs.begin(), libs.end());
      status = RunOne(args, "");
    }
  }
  absl::StatusOr<std::string> object = status.ok() ? ReadFile(so) : status;
  std::remove(so.c_str());
  for (const std::string& o : objects) std::remove(o.c_str());
  return object;
}

absl::StatusOr<std::string> CCompiler::Compile(absl::string_view source) {
  return Compile(source, {});
}

absl::StatusOr<std::string> CCompiler::Compile(absl::string_view prelude,
                                               const std::vector<absl::string_view>& parts) {
  ASSIGN_OR_RETURN(std::string dir, folder_.Get());
  std::string source(prelude);
  for (absl::string_view p : parts) source.append(p.data(), p.size());
  const std::string key = KeyOf(source, fingerprint_);
  if (absl::StatusOr<std::string> hit = ReadFile(absl::StrCat(dir, "/", key, ".so")); hit.ok()) {
    absl::StatusOr<std::string> k = CheckSealed(*hit);
    if (k.ok() && *k == key) return *hit;  // a valid entry; a bad one is rebuilt below
  }
  absl::StatusOr<std::string> object = RunCompiler(prelude, parts, dir, key);
  if (!object.ok()) {  // perhaps the folder (deleted, a full disk): try the private one
    ASSIGN_OR_RETURN(std::string other, folder_.Fallback(dir, std::string(object.status().message())));
    if (other == dir) return object.status();
    object = RunCompiler(prelude, parts, other, key);
    if (!object.ok()) return object.status();  // the compiler's own message
    dir = other;
  }
  std::string sealed = SealObject(*object, key);
  if (absl::Status s = WriteFileAtomic(absl::StrCat(dir, "/", key, ".so"), {sealed}); !s.ok())
    if (absl::StatusOr<std::string> other = folder_.Fallback(dir, std::string(s.message())); other.ok())
      WriteFileAtomic(absl::StrCat(*other, "/", key, ".so"), {sealed}).IgnoreError();
  return sealed;
}

absl::StatusOr<std::string> CCompiler::Materialize(absl::string_view sealed) {
  ASSIGN_OR_RETURN(std::string key, CheckSealed(sealed));
  ASSIGN_OR_RETURN(std::string dir, folder_.Get());
  for (int attempt = 0;; ++attempt) {
    std::string path = absl::StrCat(dir, "/", key, ".so");
    if (absl::StatusOr<std::string> have = ReadFile(path); have.ok() && *have == sealed) return path;
    absl::Status s = WriteFileAtomic(path, {sealed});
    if (s.ok()) return path;
    ASSIGN_OR_RETURN(std::string other, folder_.Fallback(dir, std::string(s.message())));
    if (other == dir || attempt > 0) return s;
    dir = other;
  }
}

}  // namespace uopc
