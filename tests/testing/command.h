// Runs the project's programs from tests as a user would: a shell command line, its output
// (stdout and stderr together) and its exit status.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/wait.h>

namespace uopc::testing {

struct CommandResult {
  int status;       // exit status; 128 + N if killed by signal N; 124 past its time limit
  std::string out;  // stdout and stderr, merged
};

/// A file of this workspace's runfiles, e.g. Runfile("tools/uopc").
inline std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/uopc/" + path;
}

/// How many times slower this build runs the programs a test starts: ThreadSanitizer's
/// builds are some 10-50 times slower on the lowering's hashing (a tensor-parallel GPT of
/// 2 ranks: 5.6 s in an opt build, 105 s under TSan alone, past 300 s beside the test's
/// other shards on 2 cores), AddressSanitizer's about 3.
constexpr int SanitizerSlowdown() {
#if defined(__SANITIZE_THREAD__)
  return 6;
#elif defined(__SANITIZE_ADDRESS__)
  return 3;
#else
  return 1;
#endif
}

/// Runs `cmd` through sh; with `limit_s` > 0 it is killed after that many seconds (times
/// SanitizerSlowdown()), so that a hang fails the test instead of stalling it.
inline CommandResult RunCommand(const std::string& cmd, int limit_s = 0) {
  std::string line = cmd;
  if (limit_s > 0) {
    limit_s *= SanitizerSlowdown();
    std::string quoted;
    for (char c : cmd) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line = "timeout -k 5 " + std::to_string(limit_s) + " sh -c '" + quoted + "'";
  }
  CommandResult r{-1, ""};
  FILE* p = popen(("{ " + line + "\n} 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

}  // namespace uopc::testing
