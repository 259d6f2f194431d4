#include "frontend/index_check.h"

#include "absl/strings/str_cat.h"

#include "devices/device.h"

namespace uopc {

absl::Status CheckIndexBounds(const std::vector<const IndexCheck*>& checks,
                              const std::vector<Buffer>& largest,
                              const std::vector<int64_t>& sizes) {
  std::vector<uint64_t> bits(checks.size(), 0);  // (little-endian: the value's low bytes first)
  std::vector<Event> copied;
  for (size_t i = 0; i < checks.size(); ++i) {
    if (largest[i].device()->peer_rank() >= 0) continue;  // (its rank checks it)
    absl::StatusOr<Event> e =
        largest[i].device()->EnqueueCopyOut(&bits[i], largest[i], DTypeSize(largest[i].dtype()));
    if (!e.ok()) return e.status();
    copied.push_back(*std::move(e));
  }
  for (const Event& e : copied)
    if (absl::Status s = e.Wait(); !s.ok()) return s;
  for (size_t i = 0; i < checks.size(); ++i) {
    const int64_t size = sizes[i];
    if (largest[i].device()->peer_rank() >= 0 ||
        (size > 0 && bits[i] < static_cast<uint64_t>(size)))
      continue;
    const int shift = 64 - 8 * DTypeSize(largest[i].dtype());  // (as the index's dtype had it)
    const std::string index = checks[i]->signed_index
                                  ? absl::StrCat(static_cast<int64_t>(bits[i] << shift) >> shift)
                                  : absl::StrCat(bits[i]);
    return absl::OutOfRangeError(
        absl::StrCat(checks[i]->what, ": an index of ", index, ", outside [0, ", size, ")"));
  }
  return absl::OkStatus();
}

}  // namespace uopc
