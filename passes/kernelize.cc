#include "passes/kernelize.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

#include "core/placement.h"
#include "core/status_macros.h"
#include "core/substitute.h"
#include "core/verify.h"
#include "passes/fusion_costs.h"

namespace uopc {

namespace {

// The kernels that reach a node, up to kOwnersKept of them: a node is shared when more
// kernels reach it than may repeat it (KernelsThatMayRepeat: 1, 2, or any number), so
// knowing there are more than two decides every case, and a union of sets kept this short
// decides it as the whole sets would.
constexpr size_t kOwnersKept = 3;
using Owners = absl::InlinedVector<const UOp::Node*, kOwnersKept>;
void AddOwner(Owners& to, const UOp::Node* k) {
  if (to.size() < kOwnersKept && std::find(to.begin(), to.end(), k) == to.end()) to.push_back(k);
}

// The outermost node reached by more kernels than KernelsThatMayRepeat it (through no other
// materialized node), or null: the users of a node come before it in reverse topological
// order, so the first node found shared is the outermost, and nothing below it is needed.
template <typename Placed>
const UOp::Node* OutermostSharedWork(const std::vector<UOp>& order,
                                     const absl::flat_hash_set<const UOp::Node*>& staged,
                                     const absl::flat_hash_set<const UOp::Node*>& repeated,
                                     const Placed& placed) {
  absl::flat_hash_map<const UOp::Node*, Owners> owners;  // node -> kernels
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp& u = *it;
    if (u.is(Ops::SINK)) {
      for (const UOp& r : u.src()) AddOwner(owners[r.get()], r.get());
      continue;
    }
    const bool boundary = IsKernel(u) || staged.contains(u.get());
    const Owners mine = owners[u.get()];  // (a copy: owners[] below may rehash)
    if (!boundary && mine.size() > 1 && placed(u.get()) && !repeated.contains(u.get()) &&
        mine.size() > KernelsThatMayRepeat(u, staged))
      return u.get();
    for (const UOp& s : u.src()) {
      Owners& theirs = owners[s.get()];
      if (boundary)
        AddOwner(theirs, u.get());
      else
        for (const UOp::Node* k : mine) AddOwner(theirs, k);
    }
  }
  return nullptr;
}

// A staged value whose one use is a narrowing cast (through reshapes): a matmul of halves
// that sums in f32 and then rounds, a layer norm's f32 output that autocast's matmul reads
// as a half. The cast is staged instead, so that the buffer holds the half (half the bytes)
// and the rounding is done once, where the value is made.
template <typename Placed>
void StageNarrowedReduces(const std::vector<UOp>& order,
                          absl::flat_hash_set<const UOp::Node*>& staged, const Placed& placed) {
  absl::flat_hash_map<const UOp::Node*, std::vector<UOp>> users;
  for (const UOp& u : order)
    for (const UOp& s : u.src()) users[s.get()].push_back(u);
  for (const UOp& r : order) {
    if (!staged.contains(r.get()) || !IsFloat(r.dtype())) continue;
    UOp at = r;
    while (users[at.get()].size() == 1 && users[at.get()][0].is(Ops::RESHAPE) &&
           !staged.contains(users[at.get()][0].get()))
      at = users[at.get()][0];
    if (users[at.get()].size() != 1) continue;
    const UOp& cast = users[at.get()][0];
    if (!cast.is(Ops::CAST) || !IsFloat(cast.dtype()) || !IsFloat(r.dtype()) ||
        DTypeSize(cast.dtype()) >= DTypeSize(r.dtype()) || !placed(cast.get()))
      continue;
    staged.erase(r.get());
    staged.insert(cast.get());
  }
}

// A staged widening of a half to f32 (autocast's gradient of a bf16 matmul: the half's
// value, widened): the half is staged instead, so that the buffer holds the half (half the
// bytes) and its readers widen it as they load, exactly. (A matmul that reads it is then a
// matmul of halves, which a plugin's kernel may take: passes/supplied_kernels.h.)
template <typename Placed>
void StageWidenedHalves(const std::vector<UOp>& order,
                        absl::flat_hash_set<const UOp::Node*>& staged, const Placed& placed) {
  // a root that widens a sum rounded to a half (autocast's weight gradient, kept f32): the
  // rounded sum is staged too, and the root widens it (one small kernel more: the sum is a
  // matmul of halves, which a plugin's kernel may take)
  for (const UOp& u : order)
    if (u.is(Ops::SINK))
      for (const UOp& root : u.src()) {
        const UOp& r = root.is(Ops::STAGE) ? root.src(0) : root;  // (one the caller staged)
        if (!r.is(Ops::CAST) || r.dtype() != DType::kF32 || !r.src(0).is(Ops::CAST) ||
            !IsHalf(r.src(0).dtype()))
          continue;
        UOp sum = r.src(0).src(0);
        while (sum.is(Ops::RESHAPE)) sum = sum.src(0);
        if (sum.is(Ops::REDUCE) && placed(r.src(0).get())) staged.insert(r.src(0).get());
      }
  for (const UOp& u : order) {
    if (!u.is(Ops::CAST) || !staged.contains(u.get()) || u.dtype() != DType::kF32) continue;
    const UOp& half = u.src(0);
    if (!IsHalf(half.dtype()) || !placed(half.get()) || IsKernel(half) || half.is(Ops::BUFFER))
      continue;
    staged.erase(u.get());
    staged.insert(half.get());
  }
}

// Computations broadcast into a REDUCE: under an EXPAND inside a reduction, an expression
// would be recomputed for every element it is broadcast to (a matmul's operand, once per
// column of the other). These are materialized instead.
template <typename Placed>
void StageBroadcastIntoReduces(const std::vector<UOp>& order,
                               absl::flat_hash_set<const UOp::Node*>& staged, const Placed& placed) {
  for (const UOp& r : order) {
    if (!r.is(Ops::REDUCE)) continue;
    std::vector<UOp> stack{r.src(0)};
    absl::flat_hash_set<const UOp::Node*> seen;
    while (!stack.empty()) {
      UOp x = std::move(stack.back());
      stack.pop_back();
      if (!seen.insert(x.get()).second || IsKernel(x) || staged.contains(x.get()) ||
          x.is(Ops::REDUCE))
        continue;
      if (x.is(Ops::EXPAND) && Expensive(x.src(0), staged) && placed(x.src(0).get())) {
        // the value under its RESHAPEs: its other users (a bias gradient's sum of the same
        // gradient, say) read it too instead of computing it again
        UOp value = x.src(0);
        while (value.is(Ops::RESHAPE) && !IsKernel(value.src(0)) &&
               !staged.contains(value.src(0).get()) && !value.src(0).is(Ops::BUFFER) &&
               placed(value.src(0).get()))
          value = value.src(0);
        staged.insert(value.get());
        continue;
      }
      if (IsMovement(x.op()) || x.is(Ops::AFTER))
        stack.push_back(x.src(0));
      else
        for (const UOp& s : x.src()) stack.push_back(s);
    }
  }
}

// The BUFFER that a view (movement ops over a BUFFER, and over writes into it) lies in;
// null for anything else.
UOp ViewedBuffer(const UOp& u) {
  UOp x = u;
  while (IsMovement(x.op()) || x.is(Ops::AFTER)) x = x.src(0);
  return x.is(Ops::BUFFER) ? x : UOp();
}

bool ReadsBuffer(const UOp& u, const UOp& buffer) {
  for (const UOp& x : u.Toposort())
    if (x == buffer) return true;
  return false;
}

// Whether the view `v` of `buffer` permutes it on the way.
bool ReadsPermute(const UOp& v, const UOp& buffer) {
  for (UOp x = v; !(x == buffer); x = x.src(0))
    if (x.is(Ops::PERMUTE)) return true;
  return false;
}

// Whether each element of `value` reads the buffer under `target` (an ASSIGN's, a view of
// the whole buffer: IsWholeBuffer) only at its own position: every path from `value` down to
// the buffer passes through elementwise ops and reshapes alone (both keep an element's flat
// position) to the buffer itself or to the view that the target reshapes (a permute of the
// buffer, say), so that writing `value` over the target in place reads nothing it has
// overwritten (an index_add_: the buffer plus a scatter).
bool ReadsOnlyInPlace(const UOp& value, const UOp& target) {
  UOp view = target;  // (what the target reshapes: its elements in the target's flat order)
  while (view.is(Ops::RESHAPE)) view = view.src(0);
  const UOp buffer = ViewedBuffer(target);
  // (where the view permutes the buffer, a flat position in the buffer is another element)
  const bool flat = !ReadsPermute(view, buffer);
  // (one pass, sources first: whether each node reaches the buffer, and whether it reads
  // it only in place)
  absl::flat_hash_map<const UOp::Node*, std::pair<bool, bool>> seen;  // -> {reaches, in place}
  for (const UOp& u : value.Toposort()) {
    bool reaches = u == buffer;
    for (const UOp& s : u.src()) reaches |= seen.at(s.get()).first;
    bool in_place = !reaches || u == view || (flat && u == buffer);
    if (!in_place && (IsAlu(u.op()) || u.is(Ops::RESHAPE) || u.is(Ops::AFTER))) {
      const size_t n = IsAlu(u.op()) ? u.src().size() : 1;  // (a reshape's dims, an AFTER's writes)
      in_place = true;
      for (size_t i = 0; i < n; ++i) in_place &= seen.at(u.src(i).get()).second;
    }
    seen[u.get()] = {reaches, in_place};
  }
  return seen.at(value.get()).second;
}

// The count of an in-place scatter's value (Tensor::Scatter: where(0 < count, sum, base)
// under reshapes), or null: ReduceCollapse's scatter kernel stores each value into its row
// and never computes the count, so that it is no work to share between kernels (the keys
// and the values of a KV cache are scattered at the same rows).
UOp ScatterCount(const UOp& value) {
  UOp v = value;
  while (v.is(Ops::RESHAPE)) v = v.src(0);
  if (!v.is(Ops::WHERE) || !v.src(0).is(Ops::CMPLT)) return UOp();
  UOp count = v.src(0).src(1);
  while (count.is(Ops::RESHAPE)) count = count.src(0);
  return count.is(Ops::REDUCE) ? count : UOp();
}

// Whether `target` is the whole of its buffer, reshaped and permuted: each element of the
// buffer once (what ReadsOnlyInPlace's positions are positions in).
bool IsWholeBuffer(const UOp& target) {
  UOp x = target;
  while (x.is(Ops::RESHAPE) || x.is(Ops::PERMUTE) || x.is(Ops::AFTER)) x = x.src(0);
  return x.is(Ops::BUFFER);
}

constexpr const char* kSeveral = "\x01";  // a node without a device reached from two

// The device each node of `order` is computed on: its own (Placement), or for a node with
// none, the device of its users (kSeveral when they are on two devices; "" in a graph
// without devices).
absl::StatusOr<absl::flat_hash_map<const UOp::Node*, std::string>> Regions(
    const std::vector<UOp>& order, Placement& place) {
  absl::flat_hash_map<const UOp::Node*, std::string> region;
  auto merge = [&](const UOp& s, const std::string& d) -> absl::Status {
    ASSIGN_OR_RETURN(std::string own, place.Of(s));
    auto [it, fresh] = region.emplace(s.get(), own.empty() ? d : own);
    if (!fresh && own.empty() && it->second != d) it->second = kSeveral;
    return absl::OkStatus();
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp& u = *it;
    if (u.is(Ops::SINK)) {
      for (const UOp& r : u.src())
        RETURN_IF_ERROR(merge(r, r.is(Ops::STAGE) ? r.arg().Get<DeviceArg>().name : ""));
      continue;
    }
    const std::string here = region.at(u.get());  // a copy: merge() may rehash region
    if (u.is(Ops::STAGE) && !here.empty()) {
      ASSIGN_OR_RETURN(std::string inner, place.Of(u.src(0)));
      if (!inner.empty() && inner != here)
        return absl::InvalidArgumentError(absl::StrCat(
            "kernelize: a STAGE on ", here, " of a value on ", inner, "; COPY it there first"));
    }
    for (const UOp& s : u.src()) RETURN_IF_ERROR(merge(s, here));
  }
  return region;
}

}  // namespace

absl::StatusOr<UOp> Kernelize(const UOp& sink, const PassContext&) {
  if (!sink.is(Ops::SINK))
    return absl::InvalidArgumentError("kernelize: expected a SINK of the tensors to realize");
  Placement place;
  const UOp& g = sink;
  std::vector<UOp> order = g.Toposort();
  ASSIGN_OR_RETURN(auto region, Regions(order, place));
  // a node without a device shared by two devices is computed in each, never staged
  auto placed = [&](const UOp::Node* u) { return region.at(u) != kSeveral; };
  absl::flat_hash_set<const UOp::Node*> staged;
  // every COPY (COLLECTIVE) is materialized on its target (its device), from a materialized
  // source (or a buffer)
  for (const UOp& u : order)
    if (u.is(Ops::COPY) || u.is(Ops::COLLECTIVE)) {
      staged.insert(u.get());
      if (!u.src(0).is(Ops::BUFFER) && !u.src(0).is(Ops::STAGE)) staged.insert(u.src(0).get());
    }
  // expanded[u]: some consumer path from u reaches an EXPAND before a materialized node.
  absl::flat_hash_map<const UOp::Node*, bool> expanded;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp& u = *it;
    bool boundary = u.is(Ops::SINK) || IsKernel(u) || staged.contains(u.get());
    if (u.is(Ops::REDUCE) && expanded[u.get()] && placed(u.get())) {
      staged.insert(u.get());
      boundary = true;
    }
    bool down = !boundary && (expanded[u.get()] || u.is(Ops::EXPAND));
    for (const UOp& s : u.src()) expanded[s.get()] |= down;
  }
  // an in-place ASSIGN's value that reads the buffer it writes is computed whole first,
  // unless each element reads only the one it overwrites
  absl::flat_hash_set<const UOp::Node*> repeated;  // (in-place scatters' counts)
  for (const UOp& u : order) {
    if (!u.is(Ops::ASSIGN)) continue;
    if (ReadsBuffer(u.src(1), ViewedBuffer(u.src(0))) &&
        !(IsWholeBuffer(u.src(0)) && ReadsOnlyInPlace(u.src(1), u.src(0))))
      staged.insert(u.src(1).get());
    else if (UOp count = ScatterCount(u.src(1)))
      repeated.insert(count.get());
  }
  StageBroadcastIntoReduces(order, staged, placed);
  // then, until none is left, the outermost reduction or transcendental that several
  // kernels would repeat
  while (const UOp::Node* shared = OutermostSharedWork(order, staged, repeated, placed))
    staged.insert(shared);
  StageNarrowedReduces(order, staged, placed);
  StageWidenedHalves(order, staged, placed);
  UOp out = RewriteNodes(g, [&](const UOp& orig, const UOp& rebuilt) {
    // a value the caller staged already, that this pass stages too: one STAGE (which both
    // the caller's root and the other users, a COPY say, then share)
    if (orig.is(Ops::STAGE) && rebuilt.src(0).is(Ops::STAGE) &&
        rebuilt.src(0).arg() == rebuilt.arg())
      return rebuilt.src(0);
    if (!staged.contains(orig.get())) return rebuilt;
    return UOp::Derived(Ops::STAGE, {rebuilt}, DeviceArg{region.at(orig.get())});
  });
  std::vector<UOp> roots;
  for (size_t i = 0; i < out.src().size(); ++i) {
    const UOp& r = out.src(i);
    roots.push_back(IsKernel(r) || r.is(Ops::AFTER)  // (an AFTER root: a buffer's writes)
                        ? r
                        : UOp::Derived(Ops::STAGE, {r}, DeviceArg{region.at(g.src(i).get())}));
  }
  return UOp::Sink(roots);
}

}  // namespace uopc
