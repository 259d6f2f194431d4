// CacheFolder: where a backend keeps its compiled kernels on disk (and the runtime its
// kernel search's choices), and what happens when that place fails. The folder is
// $UOPC_CACHE_DIR/KIND (else $XDG_CACHE_HOME/uopc/KIND, else ~/.cache/uopc/KIND). The cache
// is an optimization: when its folder cannot be used (it cannot be written, it is deleted
// during a run, the disk is full, a folder stands where an entry goes), its user moves to a
// private folder of the user's, $TMPDIR/uopc-cache-UID (0700, owned by the user, reused
// across runs, pruned of day-old entries), with one warning, and goes on. Thread-safe.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uopc {

class CacheFolder {
 public:
  /// `root` empty: the default root above; `warn` empty: warnings go to stderr.
  CacheFolder(std::string root, std::string kind, std::function<void(const std::string&)> warn);

  /// The folder in use (the cache's, or the private one after a fault).
  absl::StatusOr<std::string> Get();
  /// Moves to the private folder because `failed` failed with `why` (warning once); the
  /// folder to use from now on.
  absl::StatusOr<std::string> Fallback(const std::string& failed, absl::string_view why);

 private:
  std::string want_;
  std::function<void(const std::string&)> warn_;
  std::mutex mu_;
  std::string dir_, fallback_;
};

/// `object` followed by the trailer that seals it under `key` (its key, a hash of the bytes
/// before it, a magic): a cache entry whose truncation or corruption is detected.
std::string SealObject(absl::string_view object, absl::string_view key);
/// The key of a sealed object, or DATA_LOSS if the bytes are truncated or corrupt.
absl::StatusOr<std::string> CheckSealed(absl::string_view sealed);
/// The object a sealed entry holds, its trailer off (for an entry CheckSealed accepted).
absl::string_view SealedObject(absl::string_view sealed);

/// `base.PID.N.tmp`, unique per process and call.
std::string UniqueTemporary(absl::string_view base);

}  // namespace uopc
