#include "passes/rangeify.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "core/bounds.h"
#include "core/opt.h"
#include "core/status_macros.h"
#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "core/verify.h"
#include "passes/opts.h"
#include "passes/reduce_collapse.h"
#include "passes/scope.h"

namespace uopc {
namespace {

using Index = std::vector<UOp>;  // one i32 index expression per dim

UOp Ravel(const Index& idx, const Shape& shape) {
  UOp flat = UOp::Int(0);
  for (size_t d = 0; d < idx.size(); ++d) flat = flat * shape[d].AsUOp() + idx[d];
  return flat;
}

// Each dim at the largest value its VARs allow: a staged tensor of a symbolic shape lies in a
// buffer laid out for this shape (row-major), as the frontend lays realized tensors out.
Shape MaxShape(const Shape& s) {
  Shape m;
  for (const Dim& d : s) m.push_back(d.IsStatic() ? d : Dim(VMax(d.AsUOp())));
  return m;
}

// The BUFFER that a view (movement ops over a BUFFER, and over writes into it) lies in.
UOp ViewedBuffer(const UOp& u) {
  UOp x = u;
  while ((IsMovement(x.op()) && !x.is(Ops::PAD) && !x.is(Ops::EXPAND)) || x.is(Ops::AFTER))
    x = x.src(0);
  return x;
}

bool IsKernel(const UOp& u) { return u.is(Ops::STAGE) || u.is(Ops::ASSIGN); }

// The kernels (STAGEs and in-place writes) of `order`, in the order they run: each after the
// kernels it reads (or whose writes it reads, through AFTER), and each write after every
// kernel that reads the buffer it writes without depending on the write (those read the
// old contents); otherwise a collective as soon as it can run, and the rest in the order of
// `order`.
absl::StatusOr<std::vector<UOp>> KernelOrder(const std::vector<UOp>& order) {
  std::vector<UOp> kernels;
  absl::flat_hash_map<const UOp::Node*, int> index;
  for (const UOp& u : order)
    if (IsKernel(u)) {
      index[u.get()] = static_cast<int>(kernels.size());
      kernels.push_back(u);
    }
  const size_t n = kernels.size();
  std::vector<std::vector<int>> deps(n);                     // kernels each one needs first
  std::vector<absl::flat_hash_set<const UOp::Node*>> reads(n);  // input buffers it reads
  for (size_t k = 0; k < n; ++k) {
    const UOp& u = kernels[k];
    // (an ASSIGN reads its value; its target only orders it after earlier writes)
    std::vector<std::pair<UOp, bool>> stack{{u.is(Ops::ASSIGN) ? u.src(1) : u.src(0), true}};
    if (u.is(Ops::ASSIGN)) stack.push_back({u.src(0), false});
    absl::flat_hash_set<std::pair<const UOp::Node*, bool>> seen;
    while (!stack.empty()) {
      auto [x, read] = stack.back();
      stack.pop_back();
      if (!seen.insert({x.get(), read}).second) continue;
      if (IsKernel(x)) {
        deps[k].push_back(index.at(x.get()));
        continue;
      }
      if (x.is(Ops::BUFFER) && read) reads[k].insert(x.get());
      for (size_t i = 0; i < x.src().size(); ++i)
        stack.push_back({x.src(i), read && !(x.is(Ops::AFTER) && i > 0)});
    }
  }
  // needs[k]: every kernel k depends on, transitively (kernels come sources first)
  std::vector<std::vector<bool>> needs(n, std::vector<bool>(n, false));
  for (size_t k = 0; k < n; ++k)
    for (int d : deps[k]) {
      needs[k][d] = true;
      for (size_t j = 0; j < n; ++j) needs[k][j] = needs[k][j] || needs[d][j];
    }
  for (size_t a = 0; a < n; ++a) {
    if (!kernels[a].is(Ops::ASSIGN)) continue;
    const UOp::Node* written = ViewedBuffer(kernels[a].src(0)).get();
    for (size_t k = 0; k < n; ++k)
      if (k != a && !needs[k][a] && reads[k].contains(written)) deps[a].push_back(k);
  }
  // the kernels in dependency order, the earliest in `order` first where several are ready
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t k = 0; k < n; ++k)
    for (int d : deps[k]) {
      ++waiting[k];
      users[d].push_back(static_cast<int>(k));
    }
  // (a collective first: it runs while the kernels after it do)
  auto key = [&](int k) {
    return std::pair{!(kernels[k].is(Ops::STAGE) && kernels[k].src(0).is(Ops::COLLECTIVE)), k};
  };
  std::set<std::pair<bool, int>> ready;
  for (size_t k = 0; k < n; ++k)
    if (!waiting[k]) ready.insert(key(static_cast<int>(k)));
  std::vector<UOp> out;
  while (!ready.empty()) {
    int k = ready.begin()->second;
    ready.erase(ready.begin());
    out.push_back(kernels[k]);
    for (int u : users[k])
      if (--waiting[u] == 0) ready.insert(key(u));
  }
  if (out.size() != n)
    return absl::InvalidArgumentError(
        "rangeify: a kernel reads a buffer both before and after an in-place write to it; "
        "realize the read of the old contents first");
  return out;
}

Index Unravel(const UOp& flat, const Shape& shape) {
  Index idx(shape.size(), UOp::Int(0));
  for (const Dim& d : shape)  // no elements: no index is ever used (and strides would be 0)
    if (d.IsStatic() && d.value() == 0) return idx;
  UOp stride = UOp::Int(1);
  for (size_t d = shape.size(); d-- > 0;) {
    bool one = shape[d].IsStatic() && shape[d].value() == 1;
    UOp q = flat.FloorDiv(stride);
    idx[d] = one ? UOp::Int(0) : d == 0 ? q : q.Mod(shape[d].AsUOp());
    stride = stride * shape[d].AsUOp();
  }
  return idx;
}

// Accumulators per block when the row's values are read with a stride (see ReduceAcross).
constexpr int64_t kAcrossBlock = 16;

// Whether every load in `v` that moves with loop `r` moves by a constant number of elements
// per step: computing across `r` then reads rows (stride 1: a matmul by a row-major matrix,
// which vectorizes) or columns (a matmul by a transpose, as a backward pass builds it:
// several independent sums instead of one chain, each row of the matrix read once per
// step of the reduction); a load that jumps (a gather) keeps the reduction's loop inner.
// Returns whether some load moves by more than one (a stride), or nullopt if not even.
std::optional<bool> MovesEvenlyAlong(const UOp& v, const UOp& r) {
  bool strided = false;
  for (const UOp& x : v.Toposort()) {
    if (!x.is(Ops::INDEX)) continue;
    UOp next = RewriteNodes(
        x.src(1), [&](const UOp& orig, const UOp& rebuilt) { return orig == r ? r + 1 : rebuilt; });
    if (next == x.src(1)) continue;  // does not move with r
    const std::optional<int64_t> step = Simplify(next - x.src(1)).ConstIntValue();
    if (!step) return std::nullopt;
    strided |= *step != 1;
  }
  return strided;
}

// Whether the kernel's graph of `u` (up to the buffers it reads) has an IOTA.
bool ReadsIota(const UOp& u) {
  std::vector<UOp> todo{u};
  absl::flat_hash_set<const UOp::Node*> seen;
  while (!todo.empty()) {
    UOp x = todo.back();
    todo.pop_back();
    if (x.is(Ops::IOTA)) return true;
    if (x.is(Ops::STAGE) || x.is(Ops::BUFFER) || !seen.insert(x.get()).second) continue;
    for (const UOp& s : x.src()) todo.push_back(s);
  }
  return false;
}

bool HasAlloc(const UOp& u) {
  for (const UOp& x : u.Toposort())
    if (x.is(Ops::ALLOC)) return true;
  return false;
}

UOp Identity(Ops op, DType t) {
  if (op == Ops::ADD) return UOp::ConstInt(t, 0);
  if (op == Ops::MUL) return UOp::ConstInt(t, 1);
  if (IsFloat(t)) return UOp::ConstFloat(t, -std::numeric_limits<double>::infinity());
  return IsBool(t) ? UOp::ConstBool(t, false) : UOp::ConstInt(t, DTypeMin(t));
}

// a >= b for i32 index expressions: b - 1 < a
UOp AtLeast(const UOp& a, const UOp& b) { return (b - 1).Lt(a); }

class KernelBuilder {
 public:
  KernelBuilder(const ShapeMap& shapes, const absl::flat_hash_map<const UOp::Node*, UOp>& buffers,
                const UOp& root, const Target& target)
      : shapes_(shapes), buffers_(buffers), root_(root), target_(target), loops_(ReadLoops()) {}

  /// The kernel as the opts (passes/opts.h) see it.
  const KernelLoops& Loops() const { return loops_; }
  /// The kernel with `opts` applied; InvalidArgument if one does not apply.
  absl::StatusOr<UOp> Build(const std::vector<Opt>& opts);

 private:
  const Shape& S(const UOp& u) const { return shapes_.at(u.get()); }
  absl::StatusOr<UOp> Value(const UOp& u, const Index& idx);
  absl::StatusOr<UOp> Compute(const UOp& u, const Index& idx);
  absl::StatusOr<UOp> Reduce(const UOp& u, const Index& idx);
  UOp ReduceAcross(const UOp& u, const UOp& v, const std::vector<UOp>& loops,
                   const std::vector<UOp>& outer, bool strided, bool rows);
  /// On a CPU, a kernel that sums into rows picked by an index (ScatterOf) as rows of
  /// zeros and then each value added into its row; a null UOp where it is no such sum.
  absl::StatusOr<UOp> BuildScatter();
  /// The outermost REDUCEs the kernel computes (not those it reads from buffers).
  std::vector<UOp> Reductions() const;
  /// Whether there are some, each a sum of products of two values read from buffers
  /// (through movement ops): a plain matmul.
  bool OnlyMatmuls() const;
  /// Reads the kernel's loops off its graph (once: Loops()).
  KernelLoops ReadLoops() const;
  /// Splits the output loops by `opts`' upcasts or groups (checked first); sets inner_, row_
  /// and registers_, and records the unrolls for Reduce.
  absl::Status Schedule(const std::vector<Opt>& opts, std::vector<UOp>& loops, Index& idx);
  UOp NewRange(const Dim& size, RangeKind kind) {
    return UOp::Range(size.AsUOp(), next_range_++, kind);
  }
  /// A loop for each dim of the output longer than 1 (into `loops`); the output's index.
  Index OutputLoops(std::vector<UOp>& loops) {
    Index idx;
    for (const Dim& d : S(root_)) {
      const bool one = d.IsStatic() && d.value() == 1;
      if (!one) loops.push_back(NewRange(d, RangeKind::kLoop));
      idx.push_back(one ? UOp::Int(0) : loops.back());
    }
    return idx;
  }

  const ShapeMap& shapes_;
  const absl::flat_hash_map<const UOp::Node*, UOp>&
      buffers_;  // STAGE and input BUFFER -> buffer node
  UOp root_;     // the STAGE this kernel computes
  const Target& target_;  // what it is compiled for
  const KernelLoops loops_;
  UOp inner_;    // the innermost output loop, when reductions may be computed across it
  UOp row_;      // the loop over a tile of output rows (outside inner_), if any
  bool registers_ = false;    // inner_ and row_ are a register tile's: rows outside columns
  std::vector<Opt> unrolls_;  // the unroll actions, for each reduction's loops
  absl::flat_hash_map<std::pair<UOp, Index>, UOp> memo_;
  int next_range_ = 0, next_alloc_ = 0;
};

absl::StatusOr<UOp> KernelBuilder::Value(const UOp& u, const Index& idx) {
  auto key = std::make_pair(u, idx);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  ASSIGN_OR_RETURN(UOp v, Compute(u, idx));
  memo_.emplace(std::move(key), v);
  return v;
}

absl::StatusOr<UOp> KernelBuilder::Compute(const UOp& u, const Index& idx) {
  switch (u.op()) {
    case Ops::CONST:
    case Ops::VAR: return u;
    case Ops::BUFFER: return buffers_.at(u.get()).Index(idx[0]).Load();
    case Ops::STAGE:
      if (!(u == root_)) return buffers_.at(u.get()).Index(Ravel(idx, MaxShape(S(u)))).Load();
      return Value(u.src(0), idx);
    case Ops::AFTER: return Value(u.src(0), idx);  // (read after the writes it names)
    case Ops::RESHAPE: {
      const Shape &in = S(u.src(0)), &out = S(u);
      return Value(u.src(0), Unravel(Ravel(idx, out), in));
    }
    case Ops::EXPAND: {
      const Shape &in = S(u.src(0)), &out = S(u);
      Index x = idx;
      for (size_t d = 0; d < in.size(); ++d)
        if (in[d].IsStatic() && in[d].value() == 1 && !(out[d].IsStatic() && out[d].value() == 1))
          x[d] = UOp::Int(0);
      return Value(u.src(0), x);
    }
    case Ops::PERMUTE: {
      const std::vector<int>& order = u.arg().Get<Axes>().v;
      Index x(idx.size());
      for (size_t d = 0; d < order.size(); ++d) x[order[d]] = idx[d];
      return Value(u.src(0), x);
    }
    case Ops::SHRINK: {
      Index x = idx;
      for (size_t d = 0; d < idx.size(); ++d) x[d] = idx[d] + u.src(1 + 2 * d);
      return Value(u.src(0), x);
    }
    case Ops::FLIP: {
      Index x = idx;
      for (int d : u.arg().Get<Axes>().v) x[d] = S(u)[d].AsUOp() - 1 - idx[d];
      return Value(u.src(0), x);
    }
    case Ops::PAD: {
      const Shape& in = S(u.src(0));
      Index x = idx;
      UOp valid;
      for (size_t d = 0; d < idx.size(); ++d) {
        const UOp& before = u.src(1 + 2 * d);
        if (before.ConstIntValue() == 0 && u.src(2 + 2 * d).ConstIntValue() == 0) continue;
        UOp in_range =
            UOp::Derived(Ops::AND, {AtLeast(idx[d], before), idx[d].Lt(before + in[d].AsUOp())});
        valid = valid ? UOp::Derived(Ops::AND, {valid, in_range}) : in_range;
        x[d] = idx[d] - before;
      }
      if (!valid) return Value(u.src(0), x);
      for (UOp& e : x) e = valid.Where(e, UOp::Int(0));  // clamped: loads stay in bounds
      ASSIGN_OR_RETURN(UOp v, Value(u.src(0), x));
      return valid.Where(v, UOp::ConstInt(u.dtype(), 0));
    }
    case Ops::IOTA: return u.dtype() == DType::kI32 ? idx[0] : idx[0].Cast(u.dtype());
    case Ops::REDUCE: return Reduce(u, idx);
    case Ops::SINK: case Ops::ALLOC: case Ops::RANGE: case Ops::INDEX: case Ops::LOAD:
    case Ops::STORE: case Ops::END: case Ops::COPY: case Ops::ASSIGN: case Ops::COLLECTIVE:
    UOPC_FOR_EACH_ALU_OP(UOPC_OP_CASE)
      break;
  }
  if (!IsAlu(u.op()))
    return absl::UnimplementedError(
        absl::StrCat("rangeify: ", OpName(u.op()), " cannot be lowered to loops yet"));
  std::vector<UOp> src;
  for (const UOp& s : u.src()) {
    ASSIGN_OR_RETURN(UOp v, Value(s, idx));
    src.push_back(std::move(v));
  }
  return UOp::Make(u.op(), u.dtype(), src, u.arg());
}

// acc = identity; for r in reduced axes: acc = acc op x[...r...]; then acc
absl::StatusOr<UOp> KernelBuilder::Reduce(const UOp& u, const Index& idx) {
  const ReduceArg& ra = u.arg().Get<ReduceArg>();
  const Shape& in = S(u.src(0));
  Index x = idx;
  std::vector<UOp> loops;
  // (a reduction that may collapse into a load has plain loops, which the rules see)
  const bool gather = ReadsIota(u.src(0));
  int axis = 0;  // (counts the reduction's loops, as an unroll's axis does)
  for (int d : ra.axes) {
    if (in[d].IsStatic() && in[d].value() == 1) {
      x[d] = UOp::Int(0);
      continue;
    }
    const auto unroll = std::find_if(unrolls_.begin(), unrolls_.end(),
                                     [&](const Opt& o) { return o.axis == axis; });
    ++axis;
    const int64_t n = in[d].IsStatic() ? in[d].value() : 0;
    if (gather || unroll == unrolls_.end() || n == 0 || n % unroll->amount != 0) {
      loops.push_back(NewRange(in[d], RangeKind::kReduce));
      x[d] = loops.back();
      continue;
    }
    // in steps of `step`: the same iterations in the same order
    const int64_t step = unroll->amount;
    UOp ri = UOp::Range(step, next_range_++, RangeKind::kReduce);
    x[d] = ri;
    if (n > step) {
      UOp ro = UOp::Range(n / step, next_range_++, RangeKind::kReduce);
      loops.push_back(ro);
      x[d] = ro * step + ri;
    }
    loops.push_back(ri);
  }
  ASSIGN_OR_RETURN(UOp v, Value(u.src(0), x));
  if (loops.empty()) return v;
  v = Simplify(v);  // so that the accumulator does not depend on loops it does not use
  if (gather) v = CollapseReduce(ra.op, v, loops);
  if (loops.empty()) return v;
  std::vector<UOp> outer;
  for (const UOp& r : OpenRanges(v))
    if (std::find(loops.begin(), loops.end(), r) == loops.end()) outer.push_back(r);
  // Across the innermost output loop, when the value varies along it and reads memory
  // evenly along it: all of its reductions at once, in an array, with the reduction
  // loops outside a loop over the array (a matmul then walks rows of both operands, and
  // vectorizes).
  std::optional<bool> strided;
  if (inner_ && std::find(outer.begin(), outer.end(), inner_) != outer.end() && !HasAlloc(v) &&
      (strided = MovesEvenlyAlong(v, inner_))) {
    const bool rows = row_ && std::find(outer.begin(), outer.end(), row_) != outer.end() &&
                      MovesEvenlyAlong(v, row_);
    return ReduceAcross(u, v, loops, outer, *strided, rows);
  }
  UOp acc = UOp::Alloc(u.dtype(), next_alloc_++, 1);
  if (!outer.empty())
    acc = UOp::Derived(Ops::AFTER, [&] {
      std::vector<UOp> s{acc};
      s.insert(s.end(), outer.begin(), outer.end());
      return s;
    }());
  UOp init = acc.Index(0).Store(Identity(ra.op, u.dtype()));
  std::vector<UOp> deps{acc, init};
  deps.insert(deps.end(), loops.begin(), loops.end());
  UOp accj = UOp::Derived(Ops::AFTER, deps);
  UOp old = accj.Index(0).Load();
  UOp next = ra.op == Ops::MAX ? old.Max(v) : UOp::Derived(ra.op, {old, v});
  std::vector<UOp> end{accj.Index(0).Store(next)};
  end.insert(end.end(), loops.begin(), loops.end());
  return acc.After({UOp::Derived(Ops::END, end)}).Index(0).Load();
}

// for j: acc[j] = identity; for (reduction loops) for j: acc[j] = acc[j] op v(j); then acc[inner]
UOp KernelBuilder::ReduceAcross(const UOp& u, const UOp& v, const std::vector<UOp>& loops,
                                const std::vector<UOp>& outer, bool strided, bool rows) {
  const ReduceArg& ra = u.arg().Get<ReduceArg>();
  int64_t n = *inner_.src(0).ConstIntValue();
  const int64_t tile = rows ? *row_.src(0).ConstIntValue() : 1;
  std::vector<UOp> deps{UOp::Alloc(u.dtype(), next_alloc_++, n * tile)};
  for (const UOp& r : outer)
    if (!(r == inner_) && !(rows && r == row_)) deps.push_back(r);
  UOp acc = deps.size() == 1 ? deps[0] : UOp::Derived(Ops::AFTER, deps);
  UOp j1 = UOp::Range(n * tile, next_range_++);
  UOp init = acc.Index(j1).Store(Identity(ra.op, u.dtype())).End({j1});
  // Reading columns (a stride along j), the row is done in blocks of kAcrossBlock
  // accumulators, each block's columns read for the whole reduction while they are in
  // cache; with a tile of rows, each value read for a column serves every row of the tile.
  // Every sum still runs in the reduction's order.
  const bool blocked = strided && n % kAcrossBlock == 0 && n != kAcrossBlock;
  UOp jo = blocked ? UOp::Range(n / kAcrossBlock, next_range_++) : UOp();
  UOp ji = UOp::Range(blocked ? kAcrossBlock : n, next_range_++);
  UOp ri = rows ? UOp::Range(tile, next_range_++) : UOp();
  UOp j2 = blocked ? jo * kAcrossBlock + ji : ji;
  UOp vj = RewriteNodes(v, [&](const UOp& orig, const UOp& rebuilt) {
    return orig == inner_ ? j2 : rows && orig == row_ ? ri : rebuilt;
  });
  UOp slot = rows ? ri * n + j2 : j2;
  std::vector<UOp> after{acc, init};
  if (blocked) after.push_back(jo);
  after.insert(after.end(), loops.begin(), loops.end());
  // (in a register tile, a row's columns innermost: gcc keeps the tile's sums in registers
  // and reads each column of b once for all the rows)
  std::vector<UOp> inner{ji};
  if (rows) inner.insert(registers_ && !strided ? inner.begin() : inner.end(), ri);
  after.insert(after.end(), inner.begin(), inner.end());
  UOp accj = UOp::Derived(Ops::AFTER, after);
  UOp old = accj.Index(slot).Load();
  UOp next = ra.op == Ops::MAX ? old.Max(vj) : UOp::Derived(ra.op, {old, vj});
  UOp update = accj.Index(slot).Store(next);
  for (size_t i = inner.size(); i-- > 0;) update = update.End({inner[i]});
  std::vector<UOp> end{update};
  end.insert(end.end(), loops.begin(), loops.end());
  UOp done = UOp::Derived(Ops::END, end);
  if (blocked) done = done.End({jo});
  return acc.After({done}).Index(rows ? row_ * n + inner_ : inner_).Load();
}

absl::StatusOr<UOp> KernelBuilder::BuildScatter() {
  if (!target_.IsCpu() || !root_.is(Ops::STAGE)) return UOp();
  // the sum (through reshapes), or base + the sum (a scatter-add into a tensor)
  auto sum_of = [](UOp v) {
    while (v.is(Ops::RESHAPE)) v = v.src(0);
    return v.is(Ops::REDUCE) && v.arg().Get<ReduceArg>().op == Ops::ADD && ReadsIota(v.src(0))
               ? v
               : UOp();
  };
  UOp sum = root_.src(0), base;
  if (UOp r = sum_of(sum); !r && sum.is(Ops::ADD))
    for (int i : {1, 0})
      if (sum_of(sum.src(i))) {
        base = sum.src(1 - i), sum = sum.src(i);
        break;
      }
  const UOp r = sum_of(sum);
  if (!r) return UOp();
  const Shape& shape = S(root_);
  std::vector<UOp> outputs;
  const Index idx = OutputLoops(outputs);
  Index x = idx;  // (the REDUCE's index, through the reshapes)
  for (UOp v = sum; v.is(Ops::RESHAPE); v = v.src(0))
    x = Unravel(Ravel(x, S(v)), S(v.src(0)));
  const Shape& in = S(r.src(0));
  std::vector<UOp> loops;
  for (int d : r.arg().Get<ReduceArg>().axes) {
    if (in[d].IsStatic() && in[d].value() == 1) {
      x[d] = UOp::Int(0);
      continue;
    }
    loops.push_back(NewRange(in[d], RangeKind::kReduce));
    x[d] = loops.back();
  }
  ASSIGN_OR_RETURN(UOp v, Value(r.src(0), x));
  const std::optional<ScatterRow> row = ScatterOf(Simplify(v), outputs);
  if (!row) return UOp();
  // zeros (or the base); then, in the reduction's order (its loops outermost, which no
  // thread splits: two steps may add into one row), each value into its row
  const UOp& out = buffers_.at(root_.get());
  const UOp at = Ravel(idx, MaxShape(shape));
  UOp first = UOp::ConstInt(root_.dtype(), 0);
  if (base) {
    ASSIGN_OR_RETURN(first, Value(base, idx));
  }
  std::vector<UOp> zeros{out.Index(at).Store(first)};
  zeros.insert(zeros.end(), outputs.begin(), outputs.end());
  const UOp written = UOp::Derived(Ops::AFTER, {out, UOp::Derived(Ops::END, zeros)});
  absl::flat_hash_map<UOp, UOp> again;  // the other output loops, once more (a loop has one END)
  std::vector<UOp> adds{UOp()};
  adds.insert(adds.end(), loops.begin(), loops.end());
  for (const UOp& o : outputs)
    if (!(o == row->loop)) adds.push_back(again[o] = UOp::Range(o.src(0), next_range_++));
  auto renamed = [&](const UOp& u) {
    return RewriteNodes(u, [&](const UOp& o, const UOp& b) {
      auto it = again.find(o);
      return it == again.end() ? b : it->second;
    });
  };
  const UOp index = renamed(row->index);  // (it may move with the other output loops)
  auto scattered = [&](const UOp& u) {
    return renamed(RewriteNodes(u, [&](const UOp& o, const UOp& b) {
      return o == row->loop ? index : b;
    }));
  };
  const UOp into = written.Index(Simplify(scattered(at)));
  adds[0] = into.Store(into.Load() + scattered(row->value));
  return UOp::Sink({UOp::Derived(Ops::END, adds)});
}

std::vector<UOp> KernelBuilder::Reductions() const {
  std::vector<UOp> todo{root_}, found;
  absl::flat_hash_set<const UOp::Node*> seen;
  while (!todo.empty()) {
    UOp u = todo.back();
    todo.pop_back();
    if (!seen.insert(u.get()).second) continue;
    if (u.is(Ops::REDUCE)) {
      found.push_back(u);
      continue;
    }
    for (const UOp& s : u.src())
      if (!buffers_.contains(s.get())) todo.push_back(s);
  }
  return found;
}

bool KernelBuilder::OnlyMatmuls() const {
  // (a half read as f32, or an f32 rounded to a half as it is read, is still a read)
  auto read = [&](UOp x) {
    while (IsMovement(x.op()) || x.is(Ops::AFTER) ||
           (x.is(Ops::CAST) && (IsHalf(x.src(0).dtype()) || IsHalf(x.dtype())) &&
            IsFloat(x.src(0).dtype()) && IsFloat(x.dtype())))
      x = x.src(0);
    return buffers_.contains(x.get()) && !(x == root_);
  };
  const std::vector<UOp> sums = Reductions();
  return !sums.empty() && std::all_of(sums.begin(), sums.end(), [&](const UOp& u) {
    const UOp& v = u.src(0);
    return u.arg().Get<ReduceArg>().op == Ops::ADD && v.is(Ops::MUL) && read(v.src(0)) &&
           read(v.src(1));
  });
}

KernelLoops KernelBuilder::ReadLoops() const {
  KernelLoops k;
  for (const Dim& d : S(root_))
    if (!d.IsStatic() || d.value() != 1)
      k.outputs.push_back(d.IsStatic() ? std::optional(d.value()) : std::nullopt);
  const std::vector<UOp> sums = Reductions();
  k.reduces = !sums.empty();
  if (k.reduces) {
    const Shape& in = S(sums[0].src(0));
    for (int d : sums[0].arg().Get<ReduceArg>().axes)
      if (!in[d].IsStatic() || in[d].value() != 1)
        k.reduction.push_back(in[d].IsStatic() ? std::optional(in[d].value()) : std::nullopt);
  }
  k.matmul = OnlyMatmuls();
  k.shape = ShapeToString(S(root_));
  return k;
}

absl::Status KernelBuilder::Schedule(const std::vector<Opt>& opts, std::vector<UOp>& loops,
                                     Index& idx) {
  const KernelLoops& k = loops_;
  ASSIGN_OR_RETURN(const LoopSplits splits, SplitsOf(k, opts, target_));
  const std::vector<std::optional<int64_t>>& lengths = k.outputs;
  const int last = static_cast<int>(lengths.size()) - 1;
  unrolls_ = splits.unrolls;
  auto replace = [&](const UOp& loop, const UOp& by) {
    for (UOp& i : idx)
      if (i == loop) i = by;
  };
  if (splits.registers) {
    // blocks of the tile's columns outermost (a block of b stays in cache while every row
    // reads it), then tiles of rows, then the tile's rows and columns
    const int64_t c = splits.columns, r = splits.rows;
    auto loop = [&](int64_t size) {  // (a loop of one block is no loop)
      return size == 1 ? UOp::Int(0) : UOp::Range(size, next_range_++);
    };
    UOp ro, ri;
    if (r) ro = loop(*lengths[last - 1] / r), ri = loop(r);
    UOp co = loop(*lengths[last] / c), ci = loop(c);
    if (r) replace(loops[last - 1], ro * r + ri);
    replace(loops[last], co * c + ci);
    std::vector<UOp> tile{co};
    if (!r && last >= 1) tile.push_back(loops[last - 1]);  // (untiled rows inside the blocks)
    if (r) tile.insert(tile.end(), {ro, ri});
    tile.push_back(ci);
    loops.resize(std::max(last - 1, 0));
    for (const UOp& l : tile)
      if (l.is(Ops::RANGE)) loops.push_back(l);
    inner_ = ci, row_ = r ? ri : UOp(), registers_ = true;
    return absl::OkStatus();
  }
  if (!splits.columns) return absl::OkStatus();
  // a group of columns: their sums at once, in a row on the stack (when the row is not the
  // whole loop, the loop over groups comes outside the row tiles below)
  UOp columns;
  if (const int64_t n = *lengths[last], c = splits.columns; c < n) {
    UOp co = UOp::Range(n / c, next_range_++), ci = UOp::Range(c, next_range_++);
    replace(loops.back(), co * c + ci);
    loops.back() = co;
    loops.push_back(ci);
    columns = co;
  }
  inner_ = loops.back();
  // a group of rows: the reductions hold a tile of rows of sums (ReduceAcross)
  if (splits.rows) {
    UOp& rows = loops[loops.size() - (columns ? 3 : 2)];
    const int64_t m = *lengths[last - 1], r = splits.rows;
    UOp lo = r < m ? UOp::Range(m / r, next_range_++) : UOp();
    UOp li = UOp::Range(r, next_range_++);
    if (lo) {
      replace(rows, lo * r + li);
      rows = lo;
    } else {
      replace(rows, li);
      loops.erase(loops.begin() + (&rows - loops.data()));
    }
    loops.insert(loops.end() - 1, li);  // inside the column groups: their sums are per group
    row_ = li;
  }
  return absl::OkStatus();
}

absl::StatusOr<UOp> KernelBuilder::Build(const std::vector<Opt>& opts) {
  memo_.clear();
  next_range_ = next_alloc_ = 0;
  inner_ = row_ = UOp();
  registers_ = false;
  ASSIGN_OR_RETURN(UOp scatter, BuildScatter());
  if (scatter) return scatter;
  memo_.clear();
  next_range_ = 0;
  const Shape& shape = S(root_);
  std::vector<UOp> loops;
  Index idx = OutputLoops(loops);
  RETURN_IF_ERROR(Schedule(opts, loops, idx));
  UOp store;
  if (root_.is(Ops::ASSIGN)) {  // in place: stored where the target view reads
    ASSIGN_OR_RETURN(UOp v, Value(root_.src(1), idx));
    ASSIGN_OR_RETURN(UOp at, Value(root_.src(0), idx));
    if (!at.is(Ops::LOAD))
      return absl::InvalidArgumentError(
          "rangeify: an ASSIGN whose target is not a plain view of a buffer (padded?)");
    store = at.src(0).Store(v);
  } else {
    ASSIGN_OR_RETURN(UOp v, Value(root_, idx));
    store = buffers_.at(root_.get()).Index(Ravel(idx, MaxShape(shape))).Store(v);
  }
  if (loops.empty()) return UOp::Sink({store});
  std::vector<UOp> end{store};
  end.insert(end.end(), loops.begin(), loops.end());
  return UOp::Sink({UOp::Derived(Ops::END, end)});
}

}  // namespace

absl::StatusOr<UOp> Rangeify(const UOp& staged, const PassContext& ctx) {
  if (!staged.is(Ops::SINK))
    return absl::InvalidArgumentError("rangeify: expected a SINK of STAGEs (run kernelize first)");
  ASSIGN_OR_RETURN(ShapeMap shapes, InferShapes(staged));
  std::vector<UOp> order = staged.Toposort();
  int next_slot = 0;
  for (const UOp& u : order)
    if (u.is(Ops::BUFFER)) next_slot = std::max(next_slot, u.arg().Get<ParamArg>().slot + 1);
  absl::flat_hash_map<const UOp::Node*, UOp> buffers;
  for (const UOp& u : order) {
    if (u.is(Ops::BUFFER)) buffers[u.get()] = u;
    if (!u.is(Ops::STAGE)) continue;
    Dim n = NumElements(MaxShape(shapes.at(u.get())));
    if (!n.IsStatic())
      return absl::InvalidArgumentError(absl::StrCat(
          "rangeify: a staged tensor of shape ", ShapeToString(shapes.at(u.get())),
          " whose size has no upper bound"));
    buffers[u.get()] = UOp::Buffer(u.dtype(), next_slot++, n.value(), u.arg().Get<DeviceArg>().name);
  }
  ASSIGN_OR_RETURN(std::vector<UOp> run, KernelOrder(order));
  std::vector<UOp> kernels;
  for (const UOp& u : run) {
    if (u.is(Ops::ASSIGN)) {  // in place: the kernel writes the target's buffer
      UOp target = ViewedBuffer(u.src(0));
      if (!target.is(Ops::BUFFER))
        return absl::InvalidArgumentError(absl::StrCat(
            "rangeify: an ASSIGN into a ", OpName(target.op()),
            "; expected a view of a BUFFER made by reshape, permute, shrink or flip"));
      const Target& t = ctx.TargetOf(target.arg().Get<ParamArg>().device);
      KernelBuilder builder(shapes, buffers, u, t);
      ASSIGN_OR_RETURN(UOp k, builder.Build(DefaultOpts(builder.Loops(), t)));
      kernels.push_back(std::move(k));
      continue;
    }
    const UOp& out = buffers.at(u.get());
    // a copy or collective step: ASSIGN(dst, COPY(src)), ASSIGN(dst, COLLECTIVE(src))
    if (u.src(0).is(Ops::COPY) || u.src(0).is(Ops::COLLECTIVE)) {
      const UOp& step = u.src(0);
      auto src = buffers.find(step.src(0).get());
      if (src == buffers.end())
        return absl::InvalidArgumentError(absl::StrCat("rangeify: a ", OpName(step.op()),
                                                       " of a value that is not materialized "
                                                       "(run kernelize first)"));
      kernels.push_back(
          UOp::Derived(Ops::ASSIGN, {out, UOp::Derived(step.op(), {src->second}, step.arg())}));
      continue;
    }
    const Target& t = ctx.TargetOf(u.arg().Get<DeviceArg>().name);
    KernelBuilder builder(shapes, buffers, u, t);
    const KernelLoops& loops = builder.Loops();
    UOp k;
    if (std::vector<Opt> actions = OptActions(loops, t); ctx.choose_opts && !actions.empty()) {
      const OptSpace space{
          DefaultOpts(loops, t), std::move(actions),
          [&](const std::vector<Opt>& o) { return KernelBuilder(shapes, buffers, u, t).Build(o); },
          absl::StrCat(loops.shape, loops.matmul ? ", a matmul" : ", reducing")};
      if (absl::StatusOr<UOp> chosen = builder.Build(ctx.choose_opts(space)); chosen.ok())
        k = *chosen;  // (else the defaults)
    }
    if (!k) {
      ASSIGN_OR_RETURN(k, builder.Build(DefaultOpts(loops, t)));
    }
    kernels.push_back(std::move(k));
  }
  std::vector<UOp> outs;
  for (const UOp& r : staged.src())  // a write (or a chain of them): the buffer it wrote
    outs.push_back(r.is(Ops::STAGE) ? buffers.at(r.get()) : ViewedBuffer(r.is(Ops::ASSIGN) ? r.src(0) : r));
  return UOp::Sink({UOp::Sink(kernels), UOp::Sink(outs)});
}

}  // namespace uopc
