// Whole files in and out: read all of one, and write one so that a reader (another
// process, or this one after a crash) sees the old file or the new one, whole, never a
// part. Errors name the file; callers say what the file was for.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace uopc {

/// All of `path`; NotFound "PATH: cannot open: <why>" if it cannot be opened, an error for
/// what is not a regular file (a folder, /dev/zero) or holds more than `max_bytes`.
absl::StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes = 1ull << 34);

/// Writes `pieces`, one after another, to a fresh file beside `path` (PATH.PID.N.tmp),
/// flushes it to disk and renames it over `path`, then flushes the folder. Unavailable,
/// naming the temporary file, if a step fails (a full disk); nothing is left behind then.
/// Temporary files of `path` that a killed writer left are removed first. An existing
/// `path` that is not a regular file (a folder, /dev/null) is refused, never replaced.
absl::Status WriteFileAtomic(const std::string& path, absl::Span<const absl::string_view> pieces);

/// OK if a file can be created at `path` (its folder exists and may be written), checked
/// by creating and removing a probe beside it; else an error saying why. For a program to
/// find a bad output path before its work, not after. A folder or a device at `path` is
/// refused.
absl::Status CheckWritable(const std::string& path);

}  // namespace uopc
