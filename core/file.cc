#include "core/file.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace uopc {
namespace {

std::string Why() { return std::strerror(errno); }

// The folder of `path` ("." when it has none) and its last component.
std::pair<std::string, std::string> Split(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// Removes NAME.PID.N.tmp files beside `path` whose process is gone: what a writer killed
// during a write left behind.
void RemoveStaleTemporaries(const std::string& path) {
  auto [dir, name] = Split(path);
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  const std::string prefix = name + ".";
  while (dirent* e = readdir(d)) {
    absl::string_view f = e->d_name;
    if (!absl::ConsumePrefix(&f, prefix) || !absl::ConsumeSuffix(&f, ".tmp")) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(f, '.');
    int pid = 0;
    uint64_t n = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &pid) || !absl::SimpleAtoi(parts[1], &n) ||
        pid <= 0)
      continue;
    if (kill(pid, 0) == -1 && errno == ESRCH) unlink((dir + "/" + e->d_name).c_str());
  }
  closedir(d);
}

absl::Status WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(Why());
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", Why()));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    close(fd);
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": ", st.st_size, " bytes; at most ", max_bytes, " are read"));
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(got);  // a file that shrank while it was read
  return out;
}

absl::Status CheckReplaceable(const std::string& path);

absl::Status WriteFileAtomic(const std::string& path, absl::Span<const absl::string_view> pieces) {
  if (absl::Status s = CheckReplaceable(path); !s.ok()) return s;
  RemoveStaleTemporaries(path);
  // unique per process and call: concurrent writers of one path never share a temporary
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = absl::StrCat(path, ".", getpid(), ".", counter.fetch_add(1), ".tmp");
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot write ", tmp, ": ", Why()));
  absl::Status s;
  for (absl::string_view p : pieces)
    if (s = WriteAll(fd, p); !s.ok()) break;
  if (s.ok() && fsync(fd) != 0) s = absl::UnavailableError(Why());  // the bytes, then the name
  if (close(fd) != 0 && s.ok()) s = absl::UnavailableError(Why());
  if (!s.ok()) {
    unlink(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write ", tmp, ": ", s.message()));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = Why();
    unlink(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", path, ": ", err));
  }
  int dir = open(Split(path).first.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {  // the rename itself, on disk
    fsync(dir);
    close(dir);
  }
  return absl::OkStatus();
}

// An existing `path` that is not a regular file (a folder, a device such as /dev/null, a
// pipe) is never replaced: renaming a file over /dev/null would replace the device.
absl::Status CheckReplaceable(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      path, S_ISDIR(st.st_mode) ? ": is a folder, not a file"
                                : ": is not a regular file (a device or a pipe); refusing to "
                                  "replace it"));
}

absl::Status CheckWritable(const std::string& path) {
  if (absl::Status s = CheckReplaceable(path); !s.ok()) return s;
  const std::string probe = absl::StrCat(path, ".", getpid(), ".probe");
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write there: ", Why()));
  close(fd);
  unlink(probe.c_str());
  return absl::OkStatus();
}

}  // namespace uopc
