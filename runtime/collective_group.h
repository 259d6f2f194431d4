// CollectiveGroup: the ranks a plan's collective steps run among. runtime/ knows only this
// interface; distributed/ implements it (over a ProcessGroup) and registers each group in
// this process under the number that the group's COLLECTIVE ops carry (core/arg.h), so a
// plan names its group without depending on the distributed layer.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"

#include "core/arg.h"
#include "core/dtype.h"

namespace uopc {

class CollectiveGroup {
 public:
  virtual ~CollectiveGroup() = default;
  /// This process's rank in the group, and the group's size.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// What waits for a started collective: its status once it is done.
  using Wait = std::function<absl::Status()>;
  /// Starts `c.kind` over host memory: `in` holds `count` elements of `dtype` (this rank's
  /// value), `out` gets the result (count elements for an all-reduce, size() * count for an
  /// all-gather, count / size() for a reduce-scatter). Neither may be touched until the
  /// returned Wait has returned; collectives run in the order they are started.
  virtual Wait Start(const CollectiveArg& c, const void* in, void* out, int64_t count,
                     DType dtype) = 0;
  /// Start, then wait.
  absl::Status Run(const CollectiveArg& c, const void* in, void* out, int64_t count, DType dtype) {
    return Start(c, in, out, count, dtype)();
  }
};

/// Registers `group` (which must outlive its registration); returns its number.
int RegisterCollectiveGroup(CollectiveGroup* group);
void UnregisterCollectiveGroup(int number);
/// The group registered under `number`; NOT_FOUND names it when there is none.
absl::StatusOr<CollectiveGroup*> FindCollectiveGroup(int number);

}  // namespace uopc
