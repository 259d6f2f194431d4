#include "runtime/plan_cache.h"

#include "core/substitute.h"

namespace uopc {

CanonicalGraph Canonicalize(const UOp& sink) {
  CanonicalGraph g;
  absl::flat_hash_map<const UOp::Node*, int> slot_of;
  g.sink = RewriteNodes(sink, [&](const UOp& orig, const UOp& u) {
    if (!u.is(Ops::BUFFER)) return u;
    auto [it, fresh] = slot_of.emplace(orig.get(), static_cast<int>(g.inputs.size()));
    if (fresh) g.inputs.push_back(orig);
    const ParamArg& p = u.arg().Get<ParamArg>();
    return UOp::Buffer(u.dtype(), it->second, p.size, p.device);
  });
  return g;
}

absl::StatusOr<std::shared_ptr<const Plan>> PlanCache::Get(const CanonicalGraph& g,
                                                           const Builder& build) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = plans_.find(g.sink); it != plans_.end()) {
      ++hits_;
      return it->second;
    }
  }
  absl::StatusOr<Plan> plan = build(g.sink, static_cast<int>(g.inputs.size()));
  if (!plan.ok()) return plan.status();
  auto shared = std::make_shared<const Plan>(*std::move(plan));
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.emplace(g.sink, std::move(shared)).first->second;
}

size_t PlanCache::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

int64_t PlanCache::hits() {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

void PlanCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  plans_.clear();
}

}  // namespace uopc
