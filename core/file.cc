#include "core/file.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace uopc {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status WriteFileAtomic(const std::string& path, absl::Span<const absl::string_view> pieces) {
  // unique per process and call: concurrent writers of one path never share a temporary
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = absl::StrCat(path, ".", getpid(), ".", counter.fetch_add(1), ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    for (absl::string_view p : pieces) out.write(p.data(), static_cast<std::streamsize>(p.size()));
    out.close();
    if (!out) {
      std::string err = std::strerror(errno);
      std::remove(tmp.c_str());
      return absl::UnavailableError(absl::StrCat("cannot write ", tmp, ": ", err));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", path, ": ", err));
  }
  return absl::OkStatus();
}

}  // namespace uopc
