#include "frontend/index_check.h"

#include "absl/strings/str_cat.h"

#include "devices/device.h"

namespace uopc {

absl::Status CheckIndexBound(const IndexCheck& check, const Buffer& largest, int64_t size) {
  if (largest.device()->peer_rank() >= 0) return absl::OkStatus();  // (its rank checks it)
  uint64_t bits = 0;  // (little-endian: the value's low bytes first)
  const int bytes = DTypeSize(largest.dtype());
  if (absl::Status s = largest.device()->CopyOut(&bits, largest, bytes); !s.ok()) return s;
  if (size > 0 && bits < static_cast<uint64_t>(size)) return absl::OkStatus();
  const int shift = 64 - 8 * bytes;  // (the value as the index's signed dtype had it)
  const std::string index = check.signed_index
                                ? absl::StrCat(static_cast<int64_t>(bits << shift) >> shift)
                                : absl::StrCat(bits);
  return absl::OutOfRangeError(
      absl::StrCat(check.what, ": an index of ", index, ", outside [0, ", size, ")"));
}

}  // namespace uopc
