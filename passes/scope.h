// Loop scopes: the RANGEs a loop-IR node depends on and that are still open where it is
// used. A RANGE opens itself (and needs what its end needs); an END closes the RANGEs it
// lists. The linearizer places nodes by it; rangeify places accumulators by it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/uop.h"

namespace uopc {

/// Scopes of every node under a root, computed once, sources first.
class ScopeAnalysis {
 public:
  explicit ScopeAnalysis(const UOp& root);
  /// The open RANGEs of `u` (a node under the root), sorted by node address.
  const std::vector<const UOp::Node*>& Of(const UOp& u) const { return scope_.at(u.get()); }
  /// The RANGE node behind an entry of a scope.
  const UOp& Range(const UOp::Node* r) const { return ranges_.at(r); }

 private:
  absl::flat_hash_map<const UOp::Node*, std::vector<const UOp::Node*>> scope_;
  absl::flat_hash_map<const UOp::Node*, UOp> ranges_;
};

/// The RANGEs still open at `u`, in order of their idx.
std::vector<UOp> OpenRanges(const UOp& u);

/// Whether `root`'s graph contains `node` (`root` depends on it: a loop, a load...).
bool Reaches(const UOp& root, const UOp& node);

/// How far `index` moves when `loop` steps by one: 0 where it does not depend on it, a
/// constant, or nullopt where the step is not one constant (a loop split by a div or mod).
std::optional<int64_t> StepAlong(const UOp& index, const UOp& loop);

}  // namespace uopc
