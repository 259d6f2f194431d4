// Whole files in and out: read all of one, and write one so that a reader (another
// process, or this one after a crash) sees the old file or the new one, whole, never a
// part. Errors name the file; callers say what the file was for.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace uopc {

/// All of `path`; NotFound "PATH: cannot open: <why>" if it cannot be opened.
absl::StatusOr<std::string> ReadFile(const std::string& path);

/// Writes `pieces`, one after another, to a fresh file beside `path` and renames it over
/// `path`. Unavailable, naming the temporary file, if either step fails; nothing is left
/// behind then.
absl::Status WriteFileAtomic(const std::string& path, absl::Span<const absl::string_view> pieces);

}  // namespace uopc
