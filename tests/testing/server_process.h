// ServerProcess: a server program started by a test as a real process, on a port it picks
// itself (--port 0) and prints on its first line ("... on 127.0.0.1:41234"); killed (and
// reaped) when the object goes, or on demand, to test what its clients do when it dies.
#pragma once

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" const char* __tsan_default_suppressions() __attribute__((weak));

namespace uopc::testing {

class ServerProcess {
 public:
  /// Starts `binary` with `args` (and `env` added to the environment, NAME=VALUE), and
  /// waits for its first line; ok() is false if it exits first.
  ServerProcess(const std::string& binary, const std::vector<std::string>& args,
                const std::vector<std::string>& env = {}) {
    // (posix_spawn, not fork: a test process runs gRPC threads, and gRPC's fork handlers
    // would stall a fork while its calls drain)
    int out[2];
    if (pipe(out) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    posix_spawn_file_actions_addclose(&actions, out[1]);
    std::vector<char*> argv{const_cast<char*>(binary.c_str())}, envp;
    std::string tsan = TsanOptions();
    if (!tsan.empty()) envp.push_back(tsan.data());
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));  // (first wins)
    for (char** e = environ; *e; ++e) envp.push_back(*e);
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0)
      pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    out_ = fdopen(out[0], "r");  // (kept open while it runs: it must not write to a closed pipe)
    char line[512];
    if (out_ && fgets(line, sizeof line, out_)) first_line_ = line;
    size_t colon = first_line_.rfind(':');
    if (colon != std::string::npos) port_ = std::atoi(first_line_.c_str() + colon + 1);
  }
  ~ServerProcess() { Kill(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& first_line() const { return first_line_; }
  /// Kills it with `sig` and reaps it.
  void Kill(int sig = SIGKILL) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    if (out_) fclose(out_);
    out_ = nullptr;
  }

  /// Under ThreadSanitizer, the test's suppressions (tests/testing/tsan_suppressions.cc, if
  /// linked) for the server (and a test's other processes) too, as a file named in
  /// "TSAN_OPTIONS=..."; else "".
  static std::string TsanOptions() {
    // (TSan's runtime has a default of its own, which gives none)
    const char* suppressions = __tsan_default_suppressions ? __tsan_default_suppressions() : nullptr;
    if (!suppressions) return "";
    const char* dir = std::getenv("TEST_TMPDIR");
    std::string path = std::string(dir ? dir : "/tmp") + "/server_process_tsan.supp";
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return "";
    std::fputs(suppressions, f);
    std::fclose(f);
    return "TSAN_OPTIONS=suppressions=" + path;
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  int port_ = 0;
  std::string first_line_;
};

}  // namespace uopc::testing
