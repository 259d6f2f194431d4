#include "passes/kernelize.h"

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "core/graph_rewrite.h"
#include "core/placement.h"
#include "core/status_macros.h"
#include "core/substitute.h"
#include "core/verify.h"

namespace uopc {

namespace {

// A node that is a kernel of its own: a STAGE, or an in-place write (ASSIGN).
bool IsKernel(const UOp& u) { return u.is(Ops::STAGE) || u.is(Ops::ASSIGN); }

// Whether `u` reads more than three buffers (materialized values) through no materialized
// node: a residual stream that no kernel writes is the sum of every block's output.
bool ReadsManyBuffers(const UOp& u, const absl::flat_hash_set<const UOp::Node*>& staged) {
  std::vector<UOp> stack{u};
  absl::flat_hash_set<const UOp::Node*> seen;
  int reads = 0;
  while (!stack.empty()) {
    UOp x = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(x.get()).second) continue;
    if (IsKernel(x) || staged.contains(x.get()) || x.is(Ops::BUFFER)) {
      if (++reads > 3) return true;
      continue;
    }
    if (IsMovement(x.op()) || x.is(Ops::AFTER))
      stack.push_back(x.src(0));
    else
      for (const UOp& s : x.src()) stack.push_back(s);
  }
  return false;
}

// How many kernels may compute `u` each (reaching it through no materialized node) before
// it is worth materializing once: a reduction, one; an elementwise value that reads many
// buffers, one (a GPT's residual stream, summed again from every block's output by each of
// a layer norm's kernels, forward and backward); a transcendental (exp2, log2, sin), two: a
// softmax's exp, read by its sum, its output and three backward kernels, costs each of them
// a call per element (1 ns) where reading it back costs a load, but a softmax alone (its
// sum and output) stays three kernels. Anything else: any number.
size_t KernelsThatMayRepeat(const UOp& u, const absl::flat_hash_set<const UOp::Node*>& staged) {
  if (u.is(Ops::REDUCE)) return 1;
  if (u.is(Ops::EXP2) || u.is(Ops::LOG2) || u.is(Ops::SIN)) return 2;
  if (IsAlu(u.op()) && ReadsManyBuffers(u, staged)) return 1;
  return SIZE_MAX;
}

// Nodes reached by more kernels than KernelsThatMayRepeat them (through no other
// materialized node), outermost first.
template <typename Placed>
std::vector<const UOp::Node*> SharedWork(const std::vector<UOp>& order,
                                         const absl::flat_hash_set<const UOp::Node*>& staged,
                                         const Placed& placed) {
  absl::flat_hash_map<const UOp::Node*, absl::flat_hash_set<const UOp::Node*>>
      owners;  // node -> kernels
  std::vector<const UOp::Node*> shared;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp& u = *it;
    if (u.is(Ops::SINK)) {
      for (const UOp& r : u.src()) owners[r.get()].insert(r.get());
      continue;
    }
    bool boundary = IsKernel(u) || staged.contains(u.get());
    if (!boundary && owners[u.get()].size() > 1 && placed(u.get()) &&
        owners[u.get()].size() > KernelsThatMayRepeat(u, staged))
      shared.push_back(u.get());
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
    if (IsKernel(x) || staged.contains(x.get()) || x.is(Ops::BUFFER)) {
      ++reads;
      continue;
    }
    if (x.is(Ops::REDUCE)) return true;
    if (IsAlu(x.op())) ++alu;
    if (IsMovement(x.op()) || x.is(Ops::AFTER))
      stack.push_back(x.src(0));  // (the other sources are dims, or writes it waits for)
    else
      for (const UOp& s : x.src()) stack.push_back(s);
  }
  return alu > 3 || reads > 2;
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

// A RESHAPE chain ending in a BUFFER: a view that moves no bytes.
bool ReshapeOfBuffer(const UOp& u) {
  UOp x = u;
  while (x.is(Ops::RESHAPE)) x = x.src(0);
  return x.is(Ops::BUFFER);
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

// Copies and collectives, before anything is staged (ctx: Placement).
const PatternMatcher kCopyRules({
    // COLLECTIVE(x) -> x, where the ranks do nothing to x: the identity (f's forward, g's
    // gradient), or a group of one rank
    {UPat::Op({Ops::COLLECTIVE}, {{UPat::Var("x")}}, "c"),
     [](const Match& m) -> UOp {
       const CollectiveArg& c = m["c"].arg().Get<CollectiveArg>();
       return c.kind == CollectiveKind::kIdentity || c.size == 1 ? m["x"] : UOp();
     }},
    // COPY[d](x) -> x, where x has no device (it can be computed on d) or is on d already
    {UPat::Op({Ops::COPY}, {{UPat::Var("x")}}, "c"),
     [](const Match& m) -> UOp {
       absl::StatusOr<std::string> d = m.ctx<Placement>()->Of(m["x"]);
       if (!d.ok() || !(d->empty() || *d == m["c"].arg().Get<DeviceArg>().name)) return {};
       return m["x"];
     }},
    // COPY[d](RESHAPE(b, dims)) -> RESHAPE(COPY[d](b), dims): a buffer's bytes move as they lie
    {UPat::Op({Ops::COPY}, {{UPat::Op({Ops::RESHAPE}, std::nullopt, "r")}}, "c"),
     [](const Match& m) -> UOp {
       const UOp& r = m["r"];
       if (!ReshapeOfBuffer(r)) return {};
       std::vector<UOp> src(r.src().begin(), r.src().end());
       src[0] = UOp::Derived(Ops::COPY, {r.src(0)}, m["c"].arg());
       return r.WithSrc(src);
     }},
});

// A matrix whose rows a sum reads along their contiguous elements while the output runs
// across the rows (dY @ W^T in a backward pass): rangeify can only sum each output on its
// own, reading W by columns. Read instead from a transposed copy (a small kernel of its
// own), the output's loop runs along contiguous memory and gets a row of sums. The sums
// keep their order, so values do not change.
constexpr int64_t kTransposeRows = 16;  // fewer rows: not worth a copy

// The sizes of `s` that are not 1.
std::vector<int64_t> Sizes(const Shape& s) {
  std::vector<int64_t> out;
  for (const Dim& d : s) {
    if (!d.IsStatic()) return {-1};
    if (d.value() != 1) out.push_back(d.value());
  }
  return out;
}

// The view chain of `v` (EXPANDs, and RESHAPEs that only add or drop dims of 1) down to a
// view of a buffer as a (rows, columns) matrix: that view (RESHAPE(BUFFER)), or null.
UOp MatrixView(const UOp& v, const ShapeMap& shapes) {
  UOp x = v;
  while (x.is(Ops::EXPAND) || x.is(Ops::RESHAPE)) {
    const UOp& in = x.src(0);
    if (x.is(Ops::RESHAPE) && in.is(Ops::BUFFER))
      return Sizes(shapes.at(x.get())).size() == 2 ? x : UOp();
    if (x.is(Ops::RESHAPE) && Sizes(shapes.at(x.get())) != Sizes(shapes.at(in.get()))) return UOp();
    x = in;
  }
  return UOp();
}

// `sum` with each EXPAND of its elementwise body replaced by `copy` of it (the view chain
// again, over a copy, or itself); what it reads through other nodes (the forward pass, say)
// stays as it is.
UOp ReadCopies(const UOp& sum, const std::function<UOp(const UOp&)>& copy) {
  absl::flat_hash_map<const UOp::Node*, UOp> body;
  std::function<UOp(const UOp&)> rebuild = [&](const UOp& x) -> UOp {
    if (auto it = body.find(x.get()); it != body.end()) return it->second;
    UOp out = x;
    if (IsAlu(x.op())) {
      std::vector<UOp> src;
      for (const UOp& s : x.src()) src.push_back(rebuild(s));
      out = x.WithSrc(src);
    } else if (x.is(Ops::EXPAND)) {
      out = copy(x);
    }
    return body[x.get()] = out;
  };
  return sum.WithSrc({rebuild(sum.src(0))});
}

// A sum over the last axis of (..., m, n, k): each matrix it reads as (n, k) from its
// transposed copy, read back as (n, k).
UOp ReadRowsTransposed(const UOp& sum, int n, const ShapeMap& shapes) {
  return ReadCopies(sum, [&](const UOp& x) {
    if (!shapes.contains(x.get())) return x;
    UOp view = MatrixView(x, shapes);
    const Shape& at = shapes.at(x.get());
    std::vector<int64_t> rc = view ? Sizes(shapes.at(view.get())) : std::vector<int64_t>{};
    if (!view || rc[0] < kTransposeRows || !at[n - 2].IsStatic() || !at[n - 1].IsStatic() ||
        at[n - 2].value() != rc[0] || at[n - 1].value() != rc[1])
      return x;
    const UOp& buffer = view.src(0);
    UOp matrix = UOp::Derived(Ops::RESHAPE, {buffer, UOp::Int(rc[0]), UOp::Int(rc[1])});
    UOp t =
        UOp::Derived(Ops::PERMUTE,
                     {UOp::Derived(Ops::STAGE, {UOp::Derived(Ops::PERMUTE, {matrix}, Axes{{1, 0}})},
                                   DeviceArg{buffer.arg().Get<ParamArg>().device})},
                     Axes{{1, 0}});
    std::vector<UOp> src(view.src().begin(), view.src().end());
    src[0] = t;
    const UOp copy = view.WithSrc(src);
    return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == view ? copy : r; });
  });
}

// A sum over the middle axis of (..., m, k, n) (x @ W^T, W stored as (n, k): a head in
// PyTorch's layout, or tied to an embedding): a matrix it reads through a transpose runs
// by columns along the output's rows. It reads a transposed copy instead (a small kernel of
// its own), along contiguous memory.
UOp ReadTransposesCopied(const UOp& sum, const ShapeMap& shapes) {
  return ReadCopies(sum, [&](const UOp& x) {
    if (!shapes.contains(x.get())) return x;
    UOp t = x;  // down the view chain to a PERMUTE of a (rows, columns) view of a buffer
    while (t.is(Ops::EXPAND) ||
           (t.is(Ops::RESHAPE) && Sizes(shapes.at(t.get())) == Sizes(shapes.at(t.src(0).get()))))
      t = t.src(0);
    if (!t.is(Ops::PERMUTE) || t.arg().Get<Axes>().v != std::vector<int>{1, 0}) return x;
    const UOp& view = t.src(0);
    if (!view.is(Ops::RESHAPE) || !view.src(0).is(Ops::BUFFER)) return x;
    std::vector<int64_t> rc = Sizes(shapes.at(view.get()));
    if (rc.size() != 2 || rc[0] < kTransposeRows) return x;
    const UOp copy =
        UOp::Derived(Ops::STAGE, {t}, DeviceArg{view.src(0).arg().Get<ParamArg>().device});
    return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == t ? copy : r; });
  });
}

// A sum over the middle axis of (..., m, k, n) reading b, a (k, n) view of a buffer whose
// rows lie a multiple of 4 KiB apart (n = 1024 floats, 2048...): a block of b's columns, read
// by every row tile, falls in few cache sets, and is read again from memory for each (a 1024
// matmul ran at 130 GFLOP/s, 170 with rows 16 floats longer). It reads a copy whose rows
// are 16 elements longer instead (a small kernel of its own).
constexpr int64_t kAliasingStride = 4096;  // bytes
constexpr int64_t kPaddedRows = 64;        // fewer rows of b stay in cache anyway
UOp ReadRowsPadded(const UOp& sum, const ShapeMap& shapes) {
  return ReadCopies(sum, [&](const UOp& x) {
    if (!shapes.contains(x.get())) return x;
    UOp view = x;  // down the view chain to a (k, n) view of a buffer
    while (view.is(Ops::EXPAND) ||
           (view.is(Ops::RESHAPE) && !view.src(0).is(Ops::BUFFER) &&
            Sizes(shapes.at(view.get())) == Sizes(shapes.at(view.src(0).get()))))
      view = view.src(0);
    if (!view.is(Ops::RESHAPE) || !view.src(0).is(Ops::BUFFER)) return x;
    const std::vector<int64_t> rc = Sizes(shapes.at(view.get()));
    const Shape& in = shapes.at(x.src(0).get());  // (what the EXPAND broadcasts: b's (k, n))
    const size_t d = in.size();
    if (rc.size() != 2 || d < 2 || !in[d - 2].IsStatic() || !in[d - 1].IsStatic() ||
        in[d - 2].value() != rc[0] || in[d - 1].value() != rc[1] || rc[0] < kPaddedRows ||
        rc[1] * DTypeSize(view.dtype()) % kAliasingStride != 0)
      return x;
    const UOp matrix = UOp::Derived(Ops::RESHAPE, {view.src(0), UOp::Int(rc[0]), UOp::Int(rc[1])});
    const UOp padded = UOp::Derived(
        Ops::STAGE,
        {UOp::Derived(Ops::PAD, {matrix, UOp::Int(0), UOp::Int(0), UOp::Int(0), UOp::Int(16)})},
        DeviceArg{view.src(0).arg().Get<ParamArg>().device});
    const UOp copy = UOp::Derived(
        Ops::SHRINK, {padded, UOp::Int(0), UOp::Int(rc[0]), UOp::Int(0), UOp::Int(rc[1])});
    return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == view ? copy : r; });
  });
}

absl::StatusOr<UOp> TransposeRowReads(const UOp& g) {
  ASSIGN_OR_RETURN(ShapeMap shapes, InferShapes(g));
  return RewriteNodes(g, [&](const UOp& orig, const UOp& rebuilt) {
    if (!orig.is(Ops::REDUCE) || orig.arg().Get<ReduceArg>().op != Ops::ADD) return rebuilt;
    const int n = static_cast<int>(shapes.at(orig.src(0).get()).size());
    const std::vector<int>& axes = orig.arg().Get<ReduceArg>().axes;
    if (n >= 2 && axes == std::vector<int>{n - 1}) return ReadRowsTransposed(rebuilt, n, shapes);
    if (n >= 3 && axes == std::vector<int>{n - 2})
      return ReadRowsPadded(ReadTransposesCopied(rebuilt, shapes), shapes);
    return rebuilt;
  });
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
  UOp g = GraphRewrite(sink, kCopyRules, &place);
  ASSIGN_OR_RETURN(g, TransposeRowReads(g));
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
  // an in-place ASSIGN's value that reads the buffer it writes is computed whole first
  for (const UOp& u : order)
    if (u.is(Ops::ASSIGN) && ReadsBuffer(u.src(1), ViewedBuffer(u.src(0))))
      staged.insert(u.src(1).get());
  StageBroadcastIntoReduces(order, staged, placed);
  // then, until none is left, the outermost reduction or transcendental that several
  // kernels would repeat
  for (;;) {
    std::vector<const UOp::Node*> shared = SharedWork(order, staged, placed);
    if (shared.empty()) break;
    staged.insert(shared.front());
  }
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
