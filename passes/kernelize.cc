#include "passes/kernelize.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

#include "core/substitute.h"

namespace uopc {

namespace {

// REDUCEs reached by more than one kernel (through no other materialized node): each of
// those kernels would repeat the whole reduction.
std::vector<const UOp::Node*> SharedReduces(const std::vector<UOp>& order,
                                            const absl::flat_hash_set<const UOp::Node*>& staged) {
  absl::flat_hash_map<const UOp::Node*, absl::flat_hash_set<const UOp::Node*>>
      owners;  // node -> kernels
  std::vector<const UOp::Node*> shared;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp& u = *it;
    if (u.is(Ops::SINK)) {
      for (const UOp& r : u.src()) owners[r.get()].insert(r.get());
      continue;
    }
    bool boundary = u.is(Ops::STAGE) || staged.contains(u.get());
    if (u.is(Ops::REDUCE) && !boundary && owners[u.get()].size() > 1) shared.push_back(u.get());
    for (const UOp& s : u.src()) {
      if (boundary)
        owners[s.get()].insert(u.get());
      else
        owners[s.get()].insert(owners[u.get()].begin(), owners[u.get()].end());
    }
  }
  return shared;
}

// Whether recomputing `u` (up to the next materialized node) for every element it is
// broadcast to costs more than reading it back: it holds a REDUCE, more than three ALU ops,
// or reads more than two buffers. (Broadcasting -m into a softmax's sum is cheap; a layer
// norm's output broadcast into a matmul is not.)
bool Expensive(const UOp& u, const absl::flat_hash_set<const UOp::Node*>& staged) {
  std::vector<UOp> stack{u};
  absl::flat_hash_set<const UOp::Node*> seen;
  int alu = 0, reads = 0;
  while (!stack.empty()) {
    UOp x = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(x.get()).second) continue;
    if (x.is(Ops::STAGE) || staged.contains(x.get()) || x.is(Ops::BUFFER)) {
      ++reads;
      continue;
    }
    if (x.is(Ops::REDUCE)) return true;
    if (IsAlu(x.op())) ++alu;
    if (IsMovement(x.op()))
      stack.push_back(x.src(0));  // (the other sources are dims)
    else
      for (const UOp& s : x.src()) stack.push_back(s);
  }
  return alu > 3 || reads > 2;
}

// Computations broadcast into a REDUCE: under an EXPAND inside a reduction, an expression
// would be recomputed for every element it is broadcast to (a matmul's operand, once per
// column of the other). These are materialized instead.
void StageBroadcastIntoReduces(const std::vector<UOp>& order,
                               absl::flat_hash_set<const UOp::Node*>& staged) {
  for (const UOp& r : order) {
    if (!r.is(Ops::REDUCE)) continue;
    std::vector<UOp> stack{r.src(0)};
    absl::flat_hash_set<const UOp::Node*> seen;
    while (!stack.empty()) {
      UOp x = std::move(stack.back());
      stack.pop_back();
      if (!seen.insert(x.get()).second || x.is(Ops::STAGE) || staged.contains(x.get()) ||
          x.is(Ops::REDUCE))
        continue;
      if (x.is(Ops::EXPAND) && Expensive(x.src(0), staged)) {
        staged.insert(x.src(0).get());
        continue;
      }
      if (IsMovement(x.op()))
        stack.push_back(x.src(0));
      else
        for (const UOp& s : x.src()) stack.push_back(s);
    }
  }
}

}  // namespace

absl::StatusOr<UOp> Kernelize(const UOp& sink, const PassContext&) {
  if (!sink.is(Ops::SINK))
    return absl::InvalidArgumentError("kernelize: expected a SINK of the tensors to realize");
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
  StageBroadcastIntoReduces(order, staged);
  // then, until none is left, the outermost REDUCE that several kernels would repeat
  for (;;) {
    std::vector<const UOp::Node*> shared = SharedReduces(order, staged);
    if (shared.empty()) break;
    staged.insert(shared.front());
  }
  UOp out = RewriteNodes(sink, [&](const UOp& orig, const UOp& rebuilt) {
    if (staged.contains(orig.get())) return UOp::Derived(Ops::STAGE, {rebuilt});
    return rebuilt;
  });
  std::vector<UOp> roots;
  for (const UOp& r : out.src())
    roots.push_back(r.is(Ops::STAGE) ? r : UOp::Derived(Ops::STAGE, {r}));
  return UOp::Sink(roots);
}

}  // namespace uopc
