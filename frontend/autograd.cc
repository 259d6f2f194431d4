#include "frontend/autograd.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "core/placement.h"
#include "core/substitute.h"
#include "core/verify.h"

namespace uopc {
namespace {

Tensor Zero(const Tensor& like) { return Tensor::Scalar(0, like.dtype(), like.device()); }

class Backprop {
 public:
  Backprop(const Tensor& loss, const std::vector<Tensor>& wrt) : loss_(loss), wrt_(wrt) {}
  std::vector<Tensor> Run();

 private:
  // The loss's expression with every realized intermediate that has history replaced by
  // the expression it was computed by: a graph over parameters and data only.
  UOp Expand();
  /// `u` as a tensor on `device` (where the gradient that reaches it is).
  Tensor Wrap(const UOp& u, Device* device) const;
  /// An i32 expression of the graph (a dim, a bound) with the value the loss bound it to.
  SymInt Sym(const UOp& expr) const { return SymInt::FromUOp(expr, loss_.data()->vars); }
  void Add(const UOp& u, const Tensor& g);
  void Rule(const UOp& u, const Tensor& g);

  const Tensor& loss_;
  const std::vector<Tensor>& wrt_;
  std::shared_ptr<LazyData> holder_;                    // keeps every buffer the graphs read alive
  absl::flat_hash_map<const UOp::Node*, UOp> history_;  // realized view -> its expression
  ShapeMap shapes_;
  Placement placement_;
  absl::flat_hash_set<const UOp::Node*> needed_;  // nodes a wrt tensor is reached from
  absl::flat_hash_map<const UOp::Node*, Tensor> grads_;
};

UOp Backprop::Expand() {
  holder_ = std::make_shared<LazyData>();
  holder_->vars = loss_.data()->vars;
  std::vector<LazyData*> stack{loss_.data().get()};
  absl::flat_hash_map<const LazyData*, bool> seen;
  // The gradients keep the buffers their graphs read through copies of the realized tensors
  // (their buffers and views, nothing else): holding a parameter itself, or a tensor that
  // holds it, a parameter's gradient would hold itself (a cycle, never freed).
  std::vector<std::shared_ptr<LazyData>> all;
  while (!stack.empty()) {
    LazyData* l = stack.back();
    stack.pop_back();
    if (seen[l]) continue;
    seen[l] = true;
    if (l->requires_grad && l->buffer && !l->srcs.empty()) history_[l->uop.get()] = l->forward;
    if (l->buffer) {
      auto copy = std::make_shared<LazyData>();
      copy->uop = l->base_view ? l->base_view : l->uop;
      copy->forward = l->forward;
      copy->shape = l->shape;
      copy->dtype = l->dtype;
      copy->device = l->device;
      copy->buffer = l->buffer;
      copy->vars = l->vars;
      all.push_back(std::move(copy));
    }
    // (the gradients read the indices the forward read: their checks come along)
    for (const IndexCheck& c : l->index_checks) holder_->index_checks.push_back(c);
    for (const auto& s : l->srcs) stack.push_back(s.get());
  }
  holder_->srcs = std::move(all);
  UOp g = loss_.data()->forward;
  for (bool changed = true; changed;) {
    changed = false;
    g = RewriteNodes(g, [&](const UOp& orig, const UOp& rebuilt) {
      auto it = history_.find(orig.get());
      if (it == history_.end()) return rebuilt;
      changed = true;
      return it->second;
    });
  }
  return g;
}

Tensor Backprop::Wrap(const UOp& u, Device* device) const {
  TensorShape s;
  for (const Dim& d : shapes_.at(u.get())) s.push_back(Sym(d.AsUOp()));
  return Tensor(u, s, u.dtype(), device, {holder_});
}

void Backprop::Add(const UOp& u, const Tensor& g) {
  if (!IsFloat(u.dtype()) || !needed_.contains(u.get())) return;
  auto it = grads_.find(u.get());
  if (it == grads_.end())
    grads_.emplace(u.get(), g);
  else
    it->second = it->second + g;
}

// g is d(loss)/d(u); adds d(loss)/d(src) for each source of u.
void Backprop::Rule(const UOp& u, const Tensor& g) {
  auto src = [&](size_t i) { return Wrap(u.src(i), g.device()); };
  auto self = [&] { return Wrap(u, g.device()); };
  const double ln2 = std::log(2.0);
  switch (u.op()) {
    case Ops::ADD: Add(u.src(0), g), Add(u.src(1), g); return;
    case Ops::MUL: Add(u.src(0), g * src(1)), Add(u.src(1), g * src(0)); return;
    case Ops::MULACC:  // a * b + c
      Add(u.src(0), g * src(1)), Add(u.src(1), g * src(0)), Add(u.src(2), g);
      return;
    case Ops::FDIV:
      Add(u.src(0), g / src(1)), Add(u.src(1), -(g * src(0)) / (src(1) * src(1)));
      return;
    case Ops::MAX: {  // ties share the gradient
      Tensor a = src(0), b = src(1), half = g * 0.5;
      Add(u.src(0), a.Gt(b).Where(g, a.Eq(b).Where(half, Zero(g))));
      Add(u.src(1), b.Gt(a).Where(g, a.Eq(b).Where(half, Zero(g))));
      return;
    }
    case Ops::EXP2: Add(u.src(0), g * self() * ln2); return;
    case Ops::LOG2: Add(u.src(0), g / (src(0) * ln2)); return;
    case Ops::SIN: Add(u.src(0), g * src(0).Cos()); return;
    case Ops::SQRT: Add(u.src(0), g / (self() * 2.0)); return;
    case Ops::RECIP: Add(u.src(0), -(g * self() * self())); return;
    case Ops::CAST: Add(u.src(0), g.Cast(u.src(0).dtype())); return;
    case Ops::WHERE: {
      Tensor c = src(0);
      Add(u.src(1), c.Where(g, Zero(g)));
      Add(u.src(2), c.Where(Zero(g), g));
      return;
    }
    case Ops::RESHAPE: Add(u.src(0), g.Reshape(src(0).shape())); return;
    case Ops::EXPAND: {
      const TensorShape in = src(0).shape();  // a copy: src(0) is a temporary
      std::vector<int> axes;
      for (size_t d = 0; d < in.size(); ++d)
        if (in[d] == 1 && g.shape()[d] != 1) axes.push_back(static_cast<int>(d));
      Add(u.src(0), axes.empty() ? g : g.Sum(axes, true));
      return;
    }
    case Ops::PERMUTE: {
      const std::vector<int>& order = u.arg().Get<Axes>().v;
      std::vector<int> inverse(order.size());
      for (size_t d = 0; d < order.size(); ++d) inverse[order[d]] = static_cast<int>(d);
      Add(u.src(0), g.Permute(inverse));
      return;
    }
    case Ops::FLIP: Add(u.src(0), g.Flip(u.arg().Get<Axes>().v)); return;
    case Ops::PAD: {
      std::vector<std::pair<SymInt, SymInt>> r;
      for (size_t d = 0; d < g.shape().size(); ++d) {
        SymInt before = Sym(u.src(1 + 2 * d));
        r.push_back({before, before + src(0).shape()[d]});
      }
      Add(u.src(0), g.Shrink(r));
      return;
    }
    case Ops::SHRINK: {
      std::vector<std::pair<SymInt, SymInt>> p;
      for (size_t d = 0; d < g.shape().size(); ++d) {
        SymInt b = Sym(u.src(1 + 2 * d)), e = Sym(u.src(2 + 2 * d));
        p.push_back({b, src(0).shape()[d] - e});
      }
      Add(u.src(0), g.Pad(p));
      return;
    }
    case Ops::REDUCE: {
      const ReduceArg& ra = u.arg().Get<ReduceArg>();
      Tensor x = src(0);
      if (ra.op == Ops::ADD) {
        Add(u.src(0), g.Expand(x.shape()));
      } else if (ra.op == Ops::MAX) {  // to the maxima, shared among ties
        Tensor hit = x.Eq(self().Expand(x.shape())).Float().Cast(x.dtype());
        Tensor count = hit.Sum(ra.axes, true);
        Add(u.src(0), hit * (g / count).Expand(x.shape()));
      } else {
        ThrowInvalid(absl::StrCat("backward: no gradient for a REDUCE of ", OpName(ra.op)));
      }
      return;
    }
    case Ops::STAGE: Add(u.src(0), g); return;
    case Ops::COPY: {  // the gradient goes back to where the value came from
      absl::StatusOr<std::string> from = placement_.Of(u.src(0));
      ThrowIfError(from.status());
      if (!from->empty()) Add(u.src(0), g.To(*from));
      return;
    }
    case Ops::COLLECTIVE: {  // the partner: f's gradient is g's forward, and so on
      CollectiveArg c = u.arg().Get<CollectiveArg>();
      if (c.reduce != Ops::ADD)
        ThrowInvalid(absl::StrCat("backward: no gradient for a ", CollectiveKindName(c.kind),
                                  " reducing by ", OpName(c.reduce), "; expected add"));
      std::swap(c.kind, c.grad);
      Add(u.src(0), g.Collective(c));
      return;
    }
    case Ops::TRUNC: return;  // piecewise constant: its derivative is 0 almost everywhere
    case Ops::CONST:
    case Ops::VAR:
    case Ops::IOTA:
    case Ops::BUFFER: return;  // leaves: their gradients are read from grads_
    // results that are never float (comparisons, integer and bitwise ops) get no gradient
    // to pass on: Add() drops it before a rule would be asked
    case Ops::CMPLT:
    case Ops::CMPNE:
    case Ops::CMPEQ:
    case Ops::FLOORDIV:
    case Ops::MOD:
    case Ops::AND:
    case Ops::OR:
    case Ops::XOR:
    case Ops::SHL:
    case Ops::SHR: return;
    case Ops::INDEX:
    case Ops::LOAD:
      ThrowInvalid(
          "backward: the value depends on a data-dependent index (a gather); autodiff cannot "
          "differentiate through it (use Gather, IndexSelect or ScatterAdd)");
    case Ops::BITCAST:  // of an integer: no gradient, as an integer cast (Tensor::Detach's)
      if (!IsFloat(u.src(0).dtype())) return;
      break;
    case Ops::ASSIGN:
    case Ops::SINK:
    case Ops::ALLOC:
    case Ops::RANGE:
    case Ops::STORE:
    case Ops::END:
    case Ops::BARRIER:
    case Ops::AFTER:
    case Ops::MATMUL: break;
  }
  ThrowInvalid(absl::StrCat("backward: no gradient rule for ", OpName(u.op()), " (dtype ",
                            DTypeName(u.dtype()), "); expected a differentiable tensor op"));
}

std::vector<Tensor> Backprop::Run() {
  if (loss_.numel() != 1 || !IsFloat(loss_.dtype()))
    ThrowInvalid("backward: a loss of shape " + ShapeString(loss_.shape()) + " and dtype " +
                 std::string(DTypeName(loss_.dtype())) + "; expected one float value");
  UOp g = Expand();
  absl::StatusOr<ShapeMap> shapes = InferShapes(g);
  ThrowIfError(shapes.status());
  shapes_ = *std::move(shapes);
  std::vector<UOp> order = g.Toposort();
  absl::flat_hash_set<const UOp::Node*> wrt;
  for (const Tensor& w : wrt_) {
    const LazyData& d = *w.data();
    wrt.insert((d.buffer && d.srcs.empty() ? d.uop : d.forward).get());
  }
  for (const UOp& u : order) {
    bool reaches = wrt.contains(u.get());
    for (const UOp& s : u.src()) reaches = reaches || needed_.contains(s.get());
    if (reaches) needed_.insert(u.get());
  }
  grads_.emplace(g.get(), Tensor::Full(Wrap(g, loss_.device()).shape(), 1, g.dtype(),
                                       loss_.device()));
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    auto gi = grads_.find(it->get());
    if (gi == grads_.end()) continue;
    Tensor grad = gi->second;
    Rule(*it, grad);
  }
  std::vector<Tensor> out;
  for (const Tensor& w : wrt_) {
    const LazyData& d = *w.data();
    auto gi =
        grads_.find((d.buffer && d.srcs.empty() ? d.uop : d.forward).get());  // leaves: their view
    out.push_back(gi != grads_.end() ? gi->second.Cast(w.dtype())
                                     : Tensor::Zeros(w.shape(), w.dtype(), w.device()));
  }
  return out;
}

}  // namespace

std::vector<Tensor> Gradients(const Tensor& loss, const std::vector<Tensor>& wrt) {
  return Backprop(loss, wrt).Run();
}

void Tensor::Backward() const {
  Data();  // (not a null one)
  // the parameters: realized tensors that require grad and have no history
  std::vector<Tensor> params;
  std::vector<std::shared_ptr<LazyData>> stack{data_};
  absl::flat_hash_map<const LazyData*, bool> seen;
  while (!stack.empty()) {
    std::shared_ptr<LazyData> l = stack.back();
    stack.pop_back();
    if (seen[l.get()]) continue;
    seen[l.get()] = true;
    if (l->requires_grad && l->buffer && l->srcs.empty()) {
      Tensor p;
      p.data_ = l;
      params.push_back(p);
    }
    for (const auto& s : l->srcs) stack.push_back(s);
  }
  std::vector<Tensor> grads = Gradients(*this, params);
  for (size_t i = 0; i < params.size(); ++i) {
    LazyData& d = *params[i].data_;
    Tensor g = grads[i];
    if (d.grad) {
      Tensor old;
      old.data_ = d.grad;
      g = old + g;
    }
    d.grad = g.data_;
  }
}

}  // namespace uopc
