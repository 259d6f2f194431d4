#include "backends/c/compiler.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "core/file.h"
#include "core/fnv.h"
#include "core/status_macros.h"

extern char** environ;

namespace uopc {
namespace {

constexpr absl::string_view kMagic = "UOPCSO01";
constexpr size_t kKeyLen = 32, kTrailer = kKeyLen + 8 + 8;

// A 128-bit key from two FNV-1a hashes with different bases.
std::string KeyOf(absl::string_view a, absl::string_view b) {
  std::string all = absl::StrCat(a, std::string(1, '\0'), b);
  return Hex64(Fnv1a(all)) + Hex64(Fnv1a(all, 0x9e3779b97f4a7c15ull));
}

std::string UniqueStem(absl::string_view base) {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(base, ".", getpid(), ".", counter.fetch_add(1), ".tmp");
}

bool MakeDirs(const std::string& path) {
  std::string cur;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    cur += std::string(part) + "/";
    if (part.empty()) continue;
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Whether a file can be created in `dir` (a real write, not just the mode bits).
bool Writable(const std::string& dir) {
  std::string probe = UniqueStem(dir + "/.probe");
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return false;
  close(fd);
  unlink(probe.c_str());
  return true;
}

std::string DefaultCacheDir() {
  if (const char* d = std::getenv("UOPC_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return absl::StrCat(x, "/uopc");
  if (const char* h = std::getenv("HOME"); h && *h) return absl::StrCat(h, "/.cache/uopc");
  return "/tmp/uopc-cache";
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

// Runs argv, its stderr to `err_path`; the exit status, or an error if it could not start.
absl::StatusOr<int> Spawn(const std::vector<std::string>& argv, const std::string& err_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run ", argv[0], ": ", std::strerror(rc)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string SealObject(absl::string_view object, absl::string_view key) {
  std::string out(object);
  out += std::string(key).substr(0, kKeyLen);
  out.resize(object.size() + kKeyLen, '0');
  uint64_t h = Fnv1a(out);
  char hb[8];
  std::memcpy(hb, &h, 8);
  out.append(hb, 8);
  out.append(kMagic.data(), kMagic.size());
  return out;
}

absl::StatusOr<std::string> CheckSealed(absl::string_view sealed) {
  if (sealed.size() < kTrailer || sealed.substr(sealed.size() - 8) != kMagic)
    return absl::DataLossError(absl::StrCat("compiled object of ", sealed.size(),
                                            " bytes has no uopc trailer (truncated?)"));
  absl::string_view body = sealed.substr(0, sealed.size() - 16);
  uint64_t want;
  std::memcpy(&want, sealed.data() + sealed.size() - 16, 8);
  if (Fnv1a(body) != want)
    return absl::DataLossError(
        absl::StrCat("compiled object of ", sealed.size(), " bytes fails its checksum (corrupt)"));
  return std::string(body.substr(body.size() - kKeyLen));
}

CCompiler::CCompiler(Options options) : options_(std::move(options)) {
  fingerprint_ = absl::StrCat(options_.cc, " ", CompilerVersion(options_.cc), " ",
                              absl::StrJoin(options_.flags, " "));
}

absl::StatusOr<std::string> CCompiler::Folder() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dir_.empty()) return dir_;
  std::string want = (options_.cache_dir.empty() ? DefaultCacheDir() : options_.cache_dir) + "/c";
  if (MakeDirs(want) && Writable(want)) return dir_ = want;
  char tmpl[] = "/tmp/uopc-cache-XXXXXX";
  if (!mkdtemp(tmpl))
    return absl::UnavailableError(
        absl::StrCat("no cache folder: ", want, " is not writable and mkdtemp failed"));
  dir_ = tmpl;
  std::string msg =
      absl::StrCat("uopc: warning: the kernel cache folder ", want,
                   " cannot be written; compiled kernels go to ", dir_, " for this run");
  if (options_.warn)
    options_.warn(msg);
  else
    std::cerr << msg << "\n";
  return dir_;
}

std::string CCompiler::cache_dir() {
  absl::StatusOr<std::string> d = Folder();
  return d.ok() ? *d : "";
}

absl::StatusOr<std::string> CCompiler::RunCompiler(absl::string_view source, const std::string& dir,
                                                   const std::string& stem) {
  std::string base = UniqueStem(absl::StrCat(dir, "/", stem));
  std::string src = base + ".c", obj = base + ".so", err = base + ".err";
  {
    std::ofstream out(src, std::ios::binary);
    out << source;
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", src));
  }
  std::vector<std::string> argv{options_.cc};
  argv.insert(argv.end(), options_.flags.begin(), options_.flags.end());
  argv.insert(argv.end(), {"-o", obj, src, "-lm"});
  absl::StatusOr<int> rc = Spawn(argv, err);
  absl::StatusOr<std::string> object =
      rc.ok() && *rc == 0 ? ReadFile(obj) : absl::InternalError("");
  std::string messages = ReadFile(err).value_or("");
  for (const std::string& f : {src, obj, err}) std::remove(f.c_str());
  RETURN_IF_ERROR(rc.status());
  if (*rc != 0) {
    if (messages.size() > 2000) messages = messages.substr(0, 2000) + "...";
    return absl::InternalError(
        absl::StrCat(options_.cc, " failed (exit ", *rc, ") on generated C:\n", messages));
  }
  return object;
}

absl::StatusOr<std::string> CCompiler::Compile(absl::string_view source) {
  ASSIGN_OR_RETURN(std::string dir, Folder());
  std::string key = KeyOf(source, fingerprint_), path = absl::StrCat(dir, "/", key, ".so");
  if (absl::StatusOr<std::string> hit = ReadFile(path); hit.ok()) {
    absl::StatusOr<std::string> k = CheckSealed(*hit);
    if (k.ok() && *k == key) return *hit;  // a valid entry; a bad one is rebuilt below
  }
  ASSIGN_OR_RETURN(std::string object, RunCompiler(source, dir, key));
  std::string sealed = SealObject(object, key);
  if (absl::Status s = WriteFileAtomic(path, {sealed}); !s.ok()) {
    if (options_.warn)
      options_.warn(absl::StrCat("uopc: warning: cannot cache a kernel: ", s.message()));
  }
  return sealed;
}

absl::StatusOr<std::string> CCompiler::Materialize(absl::string_view sealed) {
  ASSIGN_OR_RETURN(std::string key, CheckSealed(sealed));
  ASSIGN_OR_RETURN(std::string dir, Folder());
  std::string path = absl::StrCat(dir, "/", key, ".so");
  if (absl::StatusOr<std::string> have = ReadFile(path); have.ok() && *have == sealed) return path;
  RETURN_IF_ERROR(WriteFileAtomic(path, {sealed}));
  return path;
}

}  // namespace uopc
