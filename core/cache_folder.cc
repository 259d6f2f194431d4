#include "core/cache_folder.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <iostream>

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "core/fnv.h"

namespace uopc {
namespace {

constexpr absl::string_view kMagic = "UOPCSO01";
constexpr size_t kKeyLen = 32, kTrailer = kKeyLen + 8 + 8;

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
  std::string probe = UniqueTemporary(dir + "/.probe");
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return false;
  close(fd);
  unlink(probe.c_str());
  return true;
}

std::string DefaultRoot() {
  if (const char* d = std::getenv("UOPC_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return absl::StrCat(x, "/uopc");
  if (const char* h = std::getenv("HOME"); h && *h) return absl::StrCat(h, "/.cache/uopc");
  return "/tmp/uopc-cache";
}

// The folder of this user's kernels when the cache folder cannot be used:
// $TMPDIR/uopc-cache-UID, private (0700, owned by this user, not a link), reused by every run
// instead of a new folder each time, and cleared of kernels unused for a day.
absl::StatusOr<std::string> PrivateFolder() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/uopc-cache-", getuid());
  mkdir(dir.c_str(), 0700);
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 077) || !Writable(dir))
    return absl::UnavailableError(absl::StrCat(dir, " is not a private folder of this user"));
  if (DIR* d = opendir(dir.c_str())) {
    const time_t old = time(nullptr) - 24 * 3600;
    while (dirent* e = readdir(d)) {
      std::string f = dir + "/" + e->d_name;
      if (e->d_name[0] != '.' && lstat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          st.st_atime < old && st.st_mtime < old)
        unlink(f.c_str());
    }
    closedir(d);
  }
  return dir;
}

}  // namespace

std::string UniqueTemporary(absl::string_view base) {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(base, ".", getpid(), ".", counter.fetch_add(1), ".tmp");
}

CacheFolder::CacheFolder(std::string root, std::string kind,
                         std::function<void(const std::string&)> warn)
    : want_(absl::StrCat(root.empty() ? DefaultRoot() : root, "/", kind)),
      warn_(std::move(warn)) {}

absl::StatusOr<std::string> CacheFolder::Get() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!dir_.empty()) return dir_;
  }
  if (MakeDirs(want_) && Writable(want_)) {
    std::lock_guard<std::mutex> lock(mu_);
    return dir_ = want_;
  }
  return Fallback(want_, "it cannot be written");
}

absl::StatusOr<std::string> CacheFolder::Fallback(const std::string& failed,
                                                  absl::string_view why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!fallback_.empty()) return fallback_;
  absl::StatusOr<std::string> dir = PrivateFolder();
  if (!dir.ok()) {
    char tmpl[] = "/tmp/uopc-cache-XXXXXX";  // the last resort: a fresh folder
    if (!mkdtemp(tmpl))
      return absl::UnavailableError(
          absl::StrCat("no folder for compiled kernels: ", failed, " failed (", why, ") and ",
                       dir.status().message()));
    dir = std::string(tmpl);
  }
  fallback_ = dir_ = *dir;
  std::string msg = absl::StrCat("uopc: warning: the kernel cache folder ", failed,
                                 " cannot be used (", why, "); compiled kernels go to ", dir_,
                                 " for this run");
  if (warn_)
    warn_(msg);
  else
    std::cerr << msg << "\n";
  return dir_;
}

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

absl::string_view SealedObject(absl::string_view sealed) {
  return sealed.substr(0, sealed.size() >= kTrailer ? sealed.size() - kTrailer : 0);
}

}  // namespace uopc
