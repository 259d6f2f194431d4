#include "passes/plan.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "core/substitute.h"

namespace uopc {

absl::StatusOr<Plan> ExtractPlan(const UOp& lowered, int num_inputs) {
  if (!lowered.is(Ops::SINK) || lowered.src().size() != 2 || !lowered.src(0).is(Ops::SINK) ||
      !lowered.src(1).is(Ops::SINK))
    return absl::InvalidArgumentError(
        "plan: expected SINK(SINK(kernels...), SINK(outputs...)) from rangeify");
  Plan plan;
  plan.num_inputs = num_inputs;
  auto spec = [&](const UOp& b, Plan::Role role) {
    int slot = b.arg().Get<ParamArg>().slot;
    if (slot >= static_cast<int>(plan.buffers.size()))
      plan.buffers.resize(slot + 1, {DType::kVoid, 0, Plan::Role::kTemp});
    Plan::BufferSpec& s = plan.buffers[slot];
    if (s.dtype == DType::kVoid)
      s = {b.dtype(), b.arg().Get<ParamArg>().size, slot < num_inputs ? Plan::Role::kInput : role};
  };
  for (const UOp& k : lowered.src(0).src()) {
    std::vector<int> slots;
    for (const UOp& u : k.Toposort())
      if (u.is(Ops::BUFFER)) {
        spec(u, Plan::Role::kTemp);
        slots.push_back(u.arg().Get<ParamArg>().slot);
      }
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    absl::flat_hash_map<int, int> local;
    for (size_t i = 0; i < slots.size(); ++i) local[slots[i]] = static_cast<int>(i);
    UOp ast = RewriteNodes(k, [&](const UOp&, const UOp& u) {
      if (!u.is(Ops::BUFFER)) return u;
      return UOp::Buffer(u.dtype(), local.at(u.arg().Get<ParamArg>().slot),
                         u.arg().Get<ParamArg>().size);
    });
    plan.kernels.push_back({ast, slots});
  }
  for (const UOp& b : lowered.src(1).src()) {
    spec(b, Plan::Role::kOutput);
    int slot = b.arg().Get<ParamArg>().slot;
    if (slot >= num_inputs) plan.buffers[slot].role = Plan::Role::kOutput;
    plan.outputs.push_back(slot);
  }
  return plan;
}

}  // namespace uopc
