#include "passes/kernelize.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/substitute.h"

namespace uopc {

absl::StatusOr<UOp> Kernelize(const UOp& sink, const PassContext&) {
  if (!sink.is(Ops::SINK)) return absl::InvalidArgumentError("kernelize: expected a SINK of the tensors to realize");
  std::vector<UOp> order = sink.Toposort();
  // expanded[u]: some consumer path from u reaches an EXPAND before a materialized node.
  absl::flat_hash_map<const UOp::Node*, bool> expanded;
  absl::flat_hash_set<const UOp::Node*> staged;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp& u = *it;
    bool boundary = u.is(Ops::SINK) || u.is(Ops::STAGE) || staged.contains(u.get());
    if (u.is(Ops::REDUCE) && expanded[u.get()]) {
      staged.insert(u.get());
      boundary = true;
    }
    bool down = !boundary && (expanded[u.get()] || u.is(Ops::EXPAND));
    for (const UOp& s : u.src()) expanded[s.get()] |= down;
  }
  UOp out = RewriteNodes(sink, [&](const UOp& orig, const UOp& rebuilt) {
    if (staged.contains(orig.get())) return UOp::Derived(Ops::STAGE, {rebuilt});
    return rebuilt;
  });
  std::vector<UOp> roots;
  for (const UOp& r : out.src()) roots.push_back(r.is(Ops::STAGE) ? r : UOp::Derived(Ops::STAGE, {r}));
  return UOp::Sink(roots);
}

}  // namespace uopc
