// The plan cache: plans keyed by the structure of the tensor graph. Input buffers are
// anonymized to their dtype, size and device, numbered by first appearance (as the seed's
// _structure_key does); the devices of STAGEs and COPYs are part of the graph, so the same
// computation on other devices is another plan. VARs are keyed by (name, lo, hi), never
// by a bound value:
// running the same computation on new data, or for another value of a VAR, reuses the
// plan and compiles nothing. Because UOps are hash-consed, the key is simply the
// canonical graph's node. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "core/uop.h"
#include "runtime/plan.h"

namespace uopc {

/// A graph with its input BUFFERs renumbered 0, 1, ... in order of first appearance.
struct CanonicalGraph {
  UOp sink;
  std::vector<UOp> inputs;  // the original BUFFER node of each canonical slot
};
CanonicalGraph Canonicalize(const UOp& sink);

class PlanCache {
 public:
  using Builder = std::function<absl::StatusOr<Plan>(const UOp& canonical_sink, int num_inputs)>;

  /// The plan for `g`, built with `build` the first time its structure is seen.
  absl::StatusOr<std::shared_ptr<const Plan>> Get(const CanonicalGraph& g, const Builder& build);
  size_t size();
  int64_t hits();
  void Clear();

 private:
  std::mutex mu_;
  absl::flat_hash_map<UOp, std::shared_ptr<const Plan>> plans_;
  int64_t hits_ = 0;
};

}  // namespace uopc
