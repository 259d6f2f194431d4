#include "passes/rangeify.h"

#include <cstdint>

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "core/status_macros.h"
#include "core/verify.h"
#include "passes/indexing.h"

namespace uopc {
namespace {

class KernelBuilder {
 public:
  KernelBuilder(const ShapeMap& shapes, const absl::flat_hash_map<const UOp::Node*, UOp>& buffers,
                const UOp& root)
      : shapes_(shapes), buffers_(buffers), root_(root) {}

  /// The kernel: a SINK of loop IR, its reductions loop-level REDUCEs.
  absl::StatusOr<UOp> Build();

 private:
  const Shape& S(const UOp& u) const { return shapes_.at(u.get()); }
  absl::StatusOr<UOp> Value(const UOp& u, const Index& idx);
  absl::StatusOr<UOp> Compute(const UOp& u, const Index& idx);
  absl::StatusOr<UOp> Reduce(const UOp& u, const Index& idx);
  UOp NewRange(const Dim& size, RangeKind kind) {
    return UOp::Range(size.AsUOp(), next_range_++, kind);
  }

  const ShapeMap& shapes_;
  const absl::flat_hash_map<const UOp::Node*, UOp>&
      buffers_;  // STAGE and input BUFFER -> buffer node
  UOp root_;     // the STAGE (or in-place ASSIGN) this kernel computes
  absl::flat_hash_map<std::pair<UOp, Index>, UOp> memo_;
  int next_range_ = 0;
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
    case Ops::RESHAPE: case Ops::EXPAND: case Ops::PERMUTE: case Ops::SHRINK: case Ops::FLIP:
    case Ops::PAD: {
      const SourceIndex in = IndexThrough(u, idx, shapes_);
      ASSIGN_OR_RETURN(UOp v, Value(u.src(0), in.index));
      return in.valid ? in.valid.Where(v, UOp::ConstInt(u.dtype(), 0)) : v;
    }
    case Ops::IOTA: return u.dtype() == DType::kI32 ? idx[0] : idx[0].Cast(u.dtype());
    case Ops::REDUCE: return Reduce(u, idx);
    case Ops::SINK: case Ops::ALLOC: case Ops::RANGE: case Ops::INDEX: case Ops::LOAD:
    case Ops::STORE:
    case Ops::END:
    case Ops::BARRIER:
    case Ops::COPY:
    case Ops::ASSIGN:
    case Ops::COLLECTIVE:
    case Ops::MATMUL: UOPC_FOR_EACH_ALU_OP(UOPC_OP_CASE) break;
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

// REDUCE(x, axes) at idx -> REDUCE(x at idx with a loop on each reduced axis, loops...)
absl::StatusOr<UOp> KernelBuilder::Reduce(const UOp& u, const Index& idx) {
  const ReduceArg& ra = u.arg().Get<ReduceArg>();
  const Shape& in = S(u.src(0));
  Index x = idx;
  std::vector<UOp> loops;
  for (int d : ra.axes) {
    if (in[d].IsStatic() && in[d].value() == 1) {
      x[d] = UOp::Int(0);
      continue;
    }
    loops.push_back(NewRange(in[d], RangeKind::kReduce));
    x[d] = loops.back();
  }
  ASSIGN_OR_RETURN(UOp v, Value(u.src(0), x));
  if (loops.empty()) return v;
  loops.insert(loops.begin(), v);
  return UOp::Make(Ops::REDUCE, u.dtype(), loops, ReduceArg{ra.op, {}});
}

absl::StatusOr<UOp> KernelBuilder::Build() {
  const Shape& shape = S(root_);
  std::vector<UOp> loops;  // a loop for each dim of the output longer than 1
  Index idx;
  for (const Dim& d : shape) {
    const bool one = d.IsStatic() && d.value() == 1;
    if (!one) loops.push_back(NewRange(d, RangeKind::kLoop));
    idx.push_back(one ? UOp::Int(0) : loops.back());
  }
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
  loops.insert(loops.begin(), store);
  return UOp::Sink({UOp::Derived(Ops::END, loops)});
}

}  // namespace

absl::StatusOr<UOp> Rangeify(const UOp& ordered, const PassContext&) {
  if (!ordered.is(Ops::SINK) || ordered.src().size() != 2 || !ordered.src(0).is(Ops::SINK) ||
      !ordered.src(1).is(Ops::SINK))
    return absl::InvalidArgumentError(
        "rangeify: expected SINK(SINK(kernels in run order), SINK(roots)) (run kernel_order "
        "first)");
  const UOp& staged = ordered.src(1);
  ASSIGN_OR_RETURN(ShapeMap shapes, InferShapes(staged));
  // kernels index with 32 bits: a buffer past 2^31-1 elements, or a dim longer (a loop),
  // would wrap (refused, not wrong); what no buffer holds may span more (a 2048 matmul's
  // products, 2^33, each summed where it is computed)
  for (const UOp& u : staged.Toposort()) {
    auto shape = shapes.find(u.get());
    if (shape == shapes.end()) continue;
    const Shape max = MaxShape(shape->second);
    const bool held = u.is(Ops::BUFFER) || u.is(Ops::STAGE);
    const Dim n = NumElements(max);
    bool long_dim = false;
    for (const Dim& d : max) long_dim |= d.IsStatic() && d.value() > INT32_MAX;
    if (long_dim || (held && n.IsStatic() && n.value() > INT32_MAX))
      return absl::InvalidArgumentError(absl::StrCat(
          "rangeify: a ", OpName(u.op()), " of shape ", ShapeToString(shape->second), " (",
          DTypeName(u.dtype()), ") has ", n.value(),
          " elements; kernels index with 32 bits, up to 2^31-1 (2147483647) elements: split it"));
  }
  int next_slot = 0;
  for (const UOp& u : staged.Toposort())
    if (u.is(Ops::BUFFER)) next_slot = std::max(next_slot, u.arg().Get<ParamArg>().slot + 1);
  absl::flat_hash_map<const UOp::Node*, UOp> buffers;
  for (const UOp& u : staged.Toposort()) {
    if (u.is(Ops::BUFFER)) buffers[u.get()] = u;
    if (!u.is(Ops::STAGE)) continue;
    Dim n = NumElements(MaxShape(shapes.at(u.get())));
    if (!n.IsStatic())
      return absl::InvalidArgumentError(absl::StrCat(
          "rangeify: a staged tensor of shape ", ShapeToString(shapes.at(u.get())),
          " whose size has no upper bound"));
    buffers[u.get()] = UOp::Buffer(u.dtype(), next_slot++, n.value(), u.arg().Get<DeviceArg>().name);
  }
  std::vector<UOp> kernels;
  for (const UOp& u : ordered.src(0).src()) {
    if (u.is(Ops::ASSIGN) && !ViewedBuffer(u.src(0)).is(Ops::BUFFER))
      return absl::InvalidArgumentError(absl::StrCat(
          "rangeify: an ASSIGN into a ", OpName(ViewedBuffer(u.src(0)).op()),
          "; expected a view of a BUFFER made by reshape, permute, shrink or flip"));
    // a copy or collective step: ASSIGN(dst, COPY(src)), ASSIGN(dst, COLLECTIVE(src))
    if (u.is(Ops::STAGE) && (u.src(0).is(Ops::COPY) || u.src(0).is(Ops::COLLECTIVE))) {
      const UOp& step = u.src(0);
      auto src = buffers.find(step.src(0).get());
      if (src == buffers.end())
        return absl::InvalidArgumentError(absl::StrCat("rangeify: a ", OpName(step.op()),
                                                       " of a value that is not materialized "
                                                       "(run kernelize first)"));
      kernels.push_back(UOp::Derived(
          Ops::ASSIGN, {buffers.at(u.get()), UOp::Derived(step.op(), {src->second}, step.arg())}));
      continue;
    }
    ASSIGN_OR_RETURN(UOp k, KernelBuilder(shapes, buffers, u).Build());
    kernels.push_back(std::move(k));
  }
  std::vector<UOp> outs;
  for (const UOp& r : staged.src())  // a write (or a chain of them): the buffer it wrote
    outs.push_back(r.is(Ops::STAGE) ? buffers.at(r.get()) : ViewedBuffer(r.is(Ops::ASSIGN) ? r.src(0) : r));
  return UOp::Sink({UOp::Sink(kernels), UOp::Sink(outs)});
}

}  // namespace uopc
