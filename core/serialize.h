// The serialized (protobuf, core/uop.proto) form of a graph, with its own format version.
// Reading validates everything: the version, names of ops and dtypes, source indices,
// the number of sources and the kind of argument of every op; bad bytes are an error,
// never a crash.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/uop.h"

namespace uopc {

/// The version of the serialized format that this build writes and reads.
inline constexpr uint32_t kUOpFormatVersion = 1;

/// The graph rooted at `root` as bytes.
std::string SerializeGraph(const UOp& root);
/// The graph back from bytes written by SerializeGraph (of the same format version).
absl::StatusOr<UOp> DeserializeGraph(absl::string_view bytes);

}  // namespace uopc
