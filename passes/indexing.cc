#include "passes/indexing.h"

#include "core/bounds.h"
#include "core/check.h"

namespace uopc {
namespace {

// a >= b for i32 index expressions: b - 1 < a
UOp AtLeast(const UOp& a, const UOp& b) { return (b - 1).Lt(a); }

}  // namespace

UOp Ravel(const Index& idx, const Shape& shape) {
  UOp flat = UOp::Int(0);
  for (size_t d = 0; d < idx.size(); ++d) flat = flat * shape[d].AsUOp() + idx[d];
  return flat;
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

Shape MaxShape(const Shape& s) {
  Shape m;
  for (const Dim& d : s) m.push_back(d.IsStatic() ? d : Dim(VMax(d.AsUOp())));
  return m;
}

UOp ViewedBuffer(const UOp& u) {
  UOp x = u;
  while ((IsMovement(x.op()) && !x.is(Ops::PAD) && !x.is(Ops::EXPAND)) || x.is(Ops::AFTER))
    x = x.src(0);
  return x;
}

SourceIndex IndexThrough(const UOp& view, const Index& idx, const ShapeMap& shapes) {
  const Shape &in = shapes.at(view.src(0).get()), &out = shapes.at(view.get());
  Index x = idx;
  switch (view.op()) {
    case Ops::RESHAPE: {
      // the dims the same at the front of both shapes, and at the back, keep their indices;
      // the ones between are raveled and unraveled (with no division by a symbolic size
      // where only dims of 1 come or go, or a static dim is split)
      size_t front = 0, back = 0;
      while (front < in.size() && front < out.size() && in[front].ProvablyEquals(out[front]))
        ++front;
      while (back < in.size() - front && back < out.size() - front &&
             in[in.size() - 1 - back].ProvablyEquals(out[out.size() - 1 - back]))
        ++back;
      if (front == 0 && back == 0) return {Unravel(Ravel(idx, out), in)};
      const Index middle(idx.begin() + front, idx.end() - back);
      const Index from = Unravel(Ravel(middle, Shape(out.begin() + front, out.end() - back)),
                                 Shape(in.begin() + front, in.end() - back));
      Index x(idx.begin(), idx.begin() + front);
      x.insert(x.end(), from.begin(), from.end());
      x.insert(x.end(), idx.end() - back, idx.end());
      return {x};
    }
    case Ops::EXPAND:
      for (size_t d = 0; d < in.size(); ++d)
        if (in[d].IsStatic() && in[d].value() == 1 && !(out[d].IsStatic() && out[d].value() == 1))
          x[d] = UOp::Int(0);
      return {x};
    case Ops::PERMUTE: {
      const std::vector<int>& order = view.arg().Get<Axes>().v;
      for (size_t d = 0; d < order.size(); ++d) x[order[d]] = idx[d];
      return {x};
    }
    case Ops::SHRINK:
      for (size_t d = 0; d < idx.size(); ++d) x[d] = idx[d] + view.src(1 + 2 * d);
      return {x};
    case Ops::FLIP:
      for (int d : view.arg().Get<Axes>().v) x[d] = out[d].AsUOp() - 1 - idx[d];
      return {x};
    case Ops::PAD: {
      UOp valid;
      for (size_t d = 0; d < idx.size(); ++d) {
        const UOp& before = view.src(1 + 2 * d);
        if (before.ConstIntValue() == 0 && view.src(2 + 2 * d).ConstIntValue() == 0) continue;
        UOp in_range =
            UOp::Derived(Ops::AND, {AtLeast(idx[d], before), idx[d].Lt(before + in[d].AsUOp())});
        valid = valid ? UOp::Derived(Ops::AND, {valid, in_range}) : in_range;
        x[d] = idx[d] - before;
      }
      if (valid)
        for (UOp& e : x) e = valid.Where(e, UOp::Int(0));  // clamped: loads stay in bounds
      return {x, valid};
    }
    case Ops::SINK: case Ops::CONST: case Ops::VAR: case Ops::BUFFER: case Ops::ALLOC:
    case Ops::RANGE: case Ops::INDEX: case Ops::LOAD: case Ops::STORE: case Ops::END:
    case Ops::BARRIER:
    case Ops::AFTER:
    case Ops::IOTA:
    case Ops::REDUCE:
    case Ops::STAGE:
    case Ops::COPY:
    case Ops::ASSIGN:
    case Ops::COLLECTIVE:
    case Ops::MATMUL: UOPC_FOR_EACH_ALU_OP(UOPC_OP_CASE) break;
  }
  UOPC_UNREACHABLE("IndexThrough of a movement op");
}

}  // namespace uopc
