// Tensor: creation, movement, realizing and printing (tensor_math.cc has the math).
#include "frontend/tensor.h"

#include <cmath>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "devices/registry.h"
#include "frontend/random.h"
#include "frontend/realize.h"

namespace uopc {

std::string ShapeString(const TensorShape& s) {
  return absl::StrCat(
      "(", absl::StrJoin(s, ", ", [](std::string* o, const SymInt& d) { o->append(d.ToString()); }),
      ")");
}

std::vector<int64_t> MaxShape(const TensorShape& s) {
  std::vector<int64_t> m;
  for (const SymInt& d : s) m.push_back(d.max());
  return m;
}

namespace {

bool IsSymbolic(const TensorShape& s) {
  return std::any_of(s.begin(), s.end(), [](const SymInt& d) { return d.is_symbolic(); });
}

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> Values(const TensorShape& s) {
  std::vector<int64_t> v;
  for (const SymInt& d : s) v.push_back(d.value());
  return v;
}

// Calls run(at, i, n) for each row of the shape's values (its innermost dim): n elements
// that lie together from element i row-major in those values, and from element `at` in a
// buffer laid out for MaxShape. (Element by element, the offsets of a batched decode step's
// logits over a 50,257-token vocabulary took 12% of its time.)
template <typename F>
void ForEachMaxLayoutRow(const TensorShape& s, F run) {
  const std::vector<int64_t> now = Values(s), max = MaxShape(s);
  const int64_t n = Count(now), row = now.empty() ? 1 : now.back();
  std::vector<int64_t> idx(now.empty() ? 0 : now.size() - 1, 0);  // a row's outer indices
  for (int64_t i = 0; i < n; i += row) {
    int64_t at = 0;
    for (size_t d = 0; d < idx.size(); ++d) at = at * max[d] + idx[d];
    run(now.empty() ? 0 : at * max.back(), i, row);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < now[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

UOp BufferView(const UOp& buffer, const TensorShape& s) {
  if (!IsSymbolic(s)) {
    if (s.size() == 1) return buffer;
    std::vector<UOp> dims{buffer};
    for (const SymInt& d : s) dims.push_back(d.uop());
    return UOp::Derived(Ops::RESHAPE, dims);
  }
  std::vector<UOp> dims{buffer}, ends{};
  for (int64_t d : MaxShape(s)) dims.push_back(UOp::Int(d));
  std::vector<UOp> shrink{s.size() == 1 ? buffer : UOp::Derived(Ops::RESHAPE, dims)};
  for (const SymInt& d : s) {
    shrink.push_back(UOp::Int(0));
    shrink.push_back(d.uop());
  }
  return UOp::Derived(Ops::SHRINK, shrink);
}

Device* DefaultDevice() {
  static Device* d = [] {
    absl::StatusOr<Device*> r = DeviceRegistry::Get().Default();
    ThrowIfError(r.status());
    return *r;
  }();
  return d;
}

Device* DeviceRef::get() const {
  if (device_) return device_;
  if (name_.empty()) return DefaultDevice();
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice(name_);
  ThrowIfError(d.status());
  return *d;
}

Tensor::Tensor(UOp uop, TensorShape shape, DType dtype, Device* device,
               std::vector<std::shared_ptr<LazyData>> srcs)
    : data_(std::make_shared<LazyData>()) {
  LazyData& d = *data_;
  d.uop = std::move(uop);
  d.forward = d.uop;
  d.shape = std::move(shape);
  d.dtype = dtype;
  d.device = device;
  d.constant = srcs.empty() ? d.uop.is(Ops::CONST) : true;
  for (const auto& s : srcs) {
    d.requires_grad |= s->requires_grad;
    d.constant &= s->constant && !s->buffer;
    d.vars = MergeBindings(d.vars, s->vars);
  }
  for (const SymInt& dim : d.shape) d.vars = MergeBindings(d.vars, dim.bindings());
  d.requires_grad &= IsFloat(dtype);  // integer and bool results carry no gradient
  d.srcs = std::move(srcs);
}

SymInt Tensor::shape(int axis) const { return Data().shape[Axis(axis, "shape")]; }

SymInt Tensor::numel() const {
  SymInt n = 1;
  for (const SymInt& d : Data().shape) n *= d;
  return n;
}

void Tensor::ThrowNull() {
  ThrowInvalid(
      "tensor: a null Tensor, which holds nothing (default-constructed, or the grad() of a "
      "tensor that has no gradient); expected a tensor with a value");
}

int Tensor::Axis(int axis, const char* op) const {
  int n = ndim();
  if (axis < -n || axis >= n)
    ThrowInvalid(absl::StrCat(op, ": axis ", axis, " of a tensor of shape ", ShapeString(shape()),
                              "; expected -", n, " <= axis < ", n));
  return axis < 0 ? axis + n : axis;
}

// ---- creation ----

Tensor Tensor::FromBytes(const void* bytes, DType dtype, TensorShape shape, Device* device) {
  for (const SymInt& d : shape)
    if (d.value() < 0) ThrowInvalid("tensor: negative dimension in shape " + ShapeString(shape));
  int64_t n = Count(MaxShape(shape));
  absl::StatusOr<Buffer> buf = device->Allocate(dtype, n);
  ThrowIfError(buf.status());
  if (device->peer_rank() >= 0) {  // another rank's: it made the same tensor there
  } else if (IsSymbolic(shape)) {  // laid out for the largest shape
    const size_t size = DTypeSize(dtype);
    std::vector<uint8_t> laid(static_cast<size_t>(n) * size, 0);
    ForEachMaxLayoutRow(shape, [&](int64_t at, int64_t i, int64_t count) {
      std::memcpy(laid.data() + at * size, static_cast<const uint8_t*>(bytes) + i * size,
                  count * size);
    });
    ThrowIfError(device->CopyIn(*buf, laid.data(), laid.size()));
  } else {
    ThrowIfError(device->CopyIn(*buf, bytes, buf->bytes()));
  }
  UOp b = UOp::Buffer(dtype, Runtime::NewBufferId(), n, device->name());
  Tensor t(BufferView(b, shape), shape, dtype, device, {});
  t.data_->buffer = *buf;
  return t;
}

Tensor Tensor::FromBuffer(Buffer buffer, TensorShape shape) {
  if (buffer.count() != Count(MaxShape(shape)))
    ThrowInvalid(absl::StrCat("tensor: a buffer of ", buffer.count(), " elements for shape ",
                              ShapeString(shape), " (laid out for ", Count(MaxShape(shape)),
                              ")"));
  Device* d = buffer.device();
  UOp b = UOp::Buffer(buffer.dtype(), Runtime::NewBufferId(), buffer.count(), d->name());
  Tensor t(BufferView(b, shape), shape, buffer.dtype(), d, {});
  t.data_->buffer = std::move(buffer);
  return t;
}

std::vector<uint8_t> Tensor::HostBytes() const {
  Tensor t = *this;
  t.Realize();
  std::vector<uint8_t> bytes(t.data_->buffer.bytes());
  ThrowIfError(t.device()->CopyOut(bytes.data(), t.data_->buffer, bytes.size()));
  if (!IsSymbolic(shape())) return bytes;
  const size_t size = DTypeSize(dtype());
  std::vector<uint8_t> out(static_cast<size_t>(Count(Values(shape()))) * size);
  ForEachMaxLayoutRow(shape(), [&](int64_t at, int64_t i, int64_t count) {
    std::memcpy(out.data() + i * size, bytes.data() + at * size, count * size);
  });
  return out;
}

Tensor Tensor::FromSymInt(const SymInt& n, DType dtype, DeviceRef device) {
  if (!n.is_symbolic()) return Scalar(static_cast<double>(n.value()), dtype, std::move(device));
  UOp u = n.uop();
  Tensor t(dtype == u.dtype() ? u : UOp::Make(Ops::CAST, dtype, {u}), {}, dtype, device.get(), {});
  t.data_->vars = n.bindings();
  t.data_->constant = true;  // no data: it joins any device
  return t;
}

Tensor& Tensor::RequiresGrad(bool on) {
  if (on && !IsFloat(dtype()))
    ThrowInvalid("requires_grad: a tensor of dtype " + std::string(DTypeName(dtype())) +
                 "; only float tensors have gradients");
  if (on) {  // a parameter: a realized leaf, its history dropped
    Realize();
    data_->srcs.clear();
  }
  data_->requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const {
  Tensor g;
  g.data_ = Data().grad;
  return g;
}

Tensor Tensor::Detach() const {
  UOp u = uop();
  // Autograd differentiates the graph of nodes, where this tensor's node is the one every
  // other use of it has: a float that requires grad is read through a bitcast to an integer
  // of its size and back, the same bits (simplify folds the pair), at which the gradient
  // stops as at any integer
  if (requires_grad() && IsFloat(dtype())) {
    const DType bits = DTypeSize(dtype()) == 8   ? DType::kI64
                       : DTypeSize(dtype()) == 4 ? DType::kI32
                                                 : DType::kI16;
    u = UOp::Make(Ops::BITCAST, dtype(), {UOp::Make(Ops::BITCAST, bits, {u})});
  }
  Tensor t(u, shape(), dtype(), device(), {data_});
  t.data_->requires_grad = false;
  return t;
}

namespace {

// Whether `u` is `plain`, or a chain of pending writes over it.
bool IsWritesOver(UOp u, const UOp& plain) {
  while (u.is(Ops::AFTER)) u = u.src(0);
  return u == plain;
}

// The tensors from `t` down to the tensor it is a view of (through movement ops only), the
// last being that tensor; just `t` when it is no such view (it is realized, or computed). A
// padded or expanded view cannot be written through.
std::vector<LazyData*> ViewChain(LazyData& t) {
  std::vector<LazyData*> chain{&t};
  for (;;) {
    LazyData* l = chain.back();
    if (l->buffer || !IsMovement(l->uop.op()) || l->srcs.size() != 1) break;
    LazyData* s = l->srcs[0].get();
    const UOp& in = l->uop.src(0);
    if (!(in == s->uop || in == s->forward || (s->base_view && IsWritesOver(in, s->base_view))))
      break;
    if (l->uop.is(Ops::PAD) || l->uop.is(Ops::EXPAND)) {
      const LazyData* base = s;
      while (!base->buffer && IsMovement(base->uop.op()) && base->srcs.size() == 1)
        base = base->srcs[0].get();
      ThrowInvalid(absl::StrCat(
          "assign: the target is ", l->uop.is(Ops::PAD) ? "a padded" : "an expanded",
          " view of a tensor of shape ", ShapeString(base->shape),
          l->uop.is(Ops::PAD) ? " (some of its elements are not in the tensor)"
                              : " (several of its elements are one element of the tensor)",
          "; expected a view made by reshape, permute, shrink, slice or flip"));
    }
    chain.push_back(s);
  }
  return chain;
}

}  // namespace

void Tensor::Assign(const Tensor& value) {
  if (value.shape() != shape() || value.dtype() != dtype())
    ThrowInvalid("assign: a value of shape " + ShapeString(value.shape()) + " and dtype " +
                 std::string(DTypeName(value.dtype())) + " to a tensor of shape " +
                 ShapeString(shape()) + " and dtype " + std::string(DTypeName(dtype())));
  Tensor v = value.To(device());  // the tensor stays where it is
  std::vector<LazyData*> chain = ViewChain(*data_);
  if (chain.size() > 1) {  // a write through the view, pending in the viewed tensor
    LazyData* base = chain.back();
    if (!base->buffer) {
      Tensor b;
      b.data_ = std::shared_ptr<LazyData>(data_, base);  // (kept alive by this view)
      b.Realize();
    }
    // the view rebuilt over the tensor as it is now (after its earlier writes)
    UOp target = base->uop;
    for (size_t i = chain.size() - 1; i-- > 0;) {
      std::vector<UOp> src(chain[i]->uop.src().begin(), chain[i]->uop.src().end());
      src[0] = target;
      target = chain[i]->uop.WithSrc(src);
    }
    if (!base->base_view) base->base_view = base->uop;
    base->uop = UOp::Derived(Ops::AFTER, {base->uop, UOp::Derived(Ops::ASSIGN, {target, v.uop()})});
    base->written_from.push_back(v.data_);
    base->vars = MergeBindings(MergeBindings(base->vars, data_->vars), v.data_->vars);
    return;
  }
  v.Realize();
  LazyData& d = *data_;
  d.buffer = v.data_->buffer;
  d.uop = d.forward = v.data_->uop;
  d.srcs.clear();
  d.grad.reset();
}

Tensor Tensor::Scalar(double value, DType dtype, DeviceRef device) {
  UOp c = IsFloat(dtype)  ? UOp::ConstFloat(dtype, value)
          : IsBool(dtype) ? UOp::ConstBool(dtype, value != 0)
                          : UOp::ConstInt(dtype, static_cast<int64_t>(value));
  return Tensor(c, {}, dtype, device.get(), {});
}

Tensor Tensor::Full(TensorShape shape, double value, DType dtype, DeviceRef device) {
  Tensor s = Scalar(value, dtype, std::move(device));
  if (shape.empty()) return s;
  return s.Reshape(TensorShape(shape.size(), 1)).Expand(shape);
}

Tensor Tensor::Arange(double start, double stop, double step, DeviceRef device) {
  if (step == 0) ThrowInvalid("arange: step 0");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((stop - start) / step)));
  bool integral =
      start == std::floor(start) && stop == std::floor(stop) && step == std::floor(step);
  if (integral && n <= INT32_MAX &&
      std::abs(start) + std::abs(step) * static_cast<double>(n) <= INT32_MAX) {
    // an expression, not data: an index into it is its value, so a rule can see through it
    Tensor i(UOp::Make(Ops::IOTA, DType::kI32, {UOp::Int(n)}, {}), {n}, DType::kI32,
             device.get(), {});
    if (step != 1) i = i * step;
    return start == 0 ? i : i + start;
  }
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i) * step;
  return FromVector(v, {n}, integral ? DType::kI32 : DType::kF32, std::move(device));
}

Tensor Tensor::Eye(int64_t n, DType dtype, DeviceRef device) {
  Tensor a = Arange(0, static_cast<double>(n), 1, std::move(device));
  return a.Unsqueeze(1).Eq(a).Cast(dtype);
}

void Tensor::ManualSeed(uint64_t seed) { RandomStream::Global().Seed(seed); }

Tensor Tensor::Rand(TensorShape shape, DType dtype, DeviceRef device) {
  int64_t n = Count(Values(shape));
  return FromVector(RandomStream::Global().Uniform(n), std::move(shape), dtype, std::move(device));
}

Tensor Tensor::Randn(TensorShape shape, DType dtype, DeviceRef device) {
  int64_t n = Count(Values(shape));
  return FromVector(RandomStream::Global().Normal(n), std::move(shape), dtype, std::move(device));
}

Tensor Tensor::Randint(int64_t lo, int64_t hi, TensorShape shape, DeviceRef device) {
  if (hi <= lo) ThrowInvalid(absl::StrCat("randint: empty range [", lo, ", ", hi, ")"));
  int64_t n = Count(Values(shape));
  return FromVector(RandomStream::Global().Integers(n, lo, hi), std::move(shape), DType::kI32,
                    std::move(device));
}

// ---- devices ----

Tensor Tensor::To(DeviceRef device) const {
  Device* d = device.get();
  if (d == this->device()) return *this;
  return Tensor(UOp::Derived(Ops::COPY, {uop()}, DeviceArg{d->name()}), shape(), dtype(), d,
                {data_});
}

Tensor Tensor::Collective(const CollectiveArg& c) const {
  TensorShape out = shape();
  if (c.kind == CollectiveKind::kAllGather || c.kind == CollectiveKind::kReduceScatter) {
    if (out.empty() || out[0].is_symbolic() ||
        (c.kind == CollectiveKind::kReduceScatter && out[0].value() % c.size))
      ThrowInvalid(
          absl::StrCat(CollectiveKindName(c.kind), ": a tensor of shape ", ShapeString(shape()),
                       " over ", c.size, " ranks; expected a constant first dim",
                       c.kind == CollectiveKind::kReduceScatter ? " that the ranks divide" : ""));
    out[0] =
        c.kind == CollectiveKind::kAllGather ? out[0].value() * c.size : out[0].value() / c.size;
  }
  return Tensor(UOp::Derived(Ops::COLLECTIVE, {uop()}, c), std::move(out), dtype(), device(),
                {data_});
}

// ---- movement ----

Tensor Tensor::View(Ops op, std::vector<SymInt> dims, Arg arg, TensorShape shape) const {
  std::vector<UOp> src{uop()};
  for (const SymInt& d : dims) src.push_back(d.uop());
  Tensor t(UOp::Derived(op, src, std::move(arg)), std::move(shape), dtype(), device(), {data_});
  for (const SymInt& d : dims) t.data_->vars = MergeBindings(t.data_->vars, d.bindings());
  return t;
}

Tensor Tensor::Reshape(TensorShape shape) const {
  SymInt known = 1;
  int infer = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!shape[d].is_symbolic() && shape[d].value() == -1) {
      if (infer >= 0) ThrowInvalid("reshape: two -1 dims in " + ShapeString(shape));
      infer = static_cast<int>(d);
    } else if (shape[d].value() < 0) {
      ThrowInvalid("reshape: negative dim in " + ShapeString(shape));
    } else {
      known *= shape[d];
    }
  }
  SymInt n = numel();
  if (infer >= 0) {
    if (known.value() == 0 || n.value() % known.value())
      ThrowInvalid(absl::StrCat("reshape: cannot infer -1 of ", ShapeString(shape), " for ",
                                n.ToString(), " elements"));
    shape[infer] = n.FloorDiv(known);
    known *= shape[infer];
  }
  if (!(known == n))
    ThrowInvalid(absl::StrCat("reshape: shape ", ShapeString(this->shape()), " (", n.ToString(),
                              " elements) to ", ShapeString(shape), " (", known.ToString(),
                              " elements); expected the same number of elements"));
  if (shape == this->shape()) return *this;
  return View(Ops::RESHAPE, shape, {}, shape);
}

Tensor Tensor::Permute(std::vector<int> order) const {
  if (static_cast<int>(order.size()) != ndim())
    ThrowInvalid(
        absl::StrCat("permute: order of ", order.size(), " axes for shape ", ShapeString(shape())));
  std::vector<bool> seen(ndim(), false);
  TensorShape out;
  for (int& a : order) {
    a = Axis(a, "permute");
    if (seen[a])
      ThrowInvalid(
          absl::StrCat("permute: axis ", a, " twice; expected a permutation of 0..", ndim() - 1));
    seen[a] = true;
    out.push_back(shape()[a]);
  }
  bool identity = true;
  for (int d = 0; d < ndim(); ++d) identity &= order[d] == d;
  if (identity) return *this;
  return View(Ops::PERMUTE, {}, Axes{order}, out);
}

Tensor Tensor::Transpose(int a, int b) const {
  std::vector<int> order(ndim());
  for (int d = 0; d < ndim(); ++d) order[d] = d;
  std::swap(order[Axis(a, "transpose")], order[Axis(b, "transpose")]);
  return Permute(order);
}

Tensor Tensor::Expand(TensorShape shape) const {
  if (shape.size() < this->shape().size())
    ThrowInvalid("expand: shape " + ShapeString(this->shape()) + " to fewer dims " +
                 ShapeString(shape));
  Tensor t = *this;
  if (shape.size() > this->shape().size()) {  // new leading dims of 1
    TensorShape s(shape.size() - this->shape().size(), 1);
    s.insert(s.end(), this->shape().begin(), this->shape().end());
    t = Reshape(s);
  }
  for (size_t d = 0; d < shape.size(); ++d)
    if (t.shape()[d] != shape[d] && t.shape()[d] != 1)
      ThrowInvalid("expand: shape " + ShapeString(this->shape()) + " to " + ShapeString(shape) +
                   "; expected each dim equal or 1");
  if (t.shape() == shape) return t;
  return t.View(Ops::EXPAND, shape, {}, shape);
}

Tensor Tensor::Pad(std::vector<std::pair<SymInt, SymInt>> pads, double value) const {
  if (static_cast<int>(pads.size()) != ndim())
    ThrowInvalid(absl::StrCat("pad: ", pads.size(), " pads for shape ", ShapeString(shape()),
                              "; expected one per dim"));
  TensorShape out = shape();
  std::vector<SymInt> dims;
  bool any = false;
  for (int d = 0; d < ndim(); ++d) {
    const auto& [before, after] = pads[d];
    if (before.value() < 0 || after.value() < 0) ThrowInvalid("pad: negative padding (use Shrink)");
    out[d] += before + after;
    any |= before != 0 || after != 0;
    dims.push_back(before);
    dims.push_back(after);
  }
  if (!any) return *this;
  Tensor padded = View(Ops::PAD, dims, {}, out);
  if (value == 0) return padded;
  Tensor mask = Tensor::Ones(shape(), DType::kBool, device()).View(Ops::PAD, dims, {}, out);
  return mask.Where(padded, padded.Like(value));
}

Tensor Tensor::Shrink(std::vector<std::pair<SymInt, SymInt>> ranges) const {
  if (static_cast<int>(ranges.size()) != ndim())
    ThrowInvalid(
        absl::StrCat("shrink: ", ranges.size(), " ranges for shape ", ShapeString(shape())));
  TensorShape out;
  std::vector<SymInt> dims;
  bool same = true;
  for (int d = 0; d < ndim(); ++d) {
    const auto& [b, e] = ranges[d];
    if (b.value() < 0 || b.value() > e.value() || e.value() > shape()[d].value()) {
      std::string now = b.is_symbolic() || e.is_symbolic() || shape()[d].is_symbolic()
                            ? absl::StrCat(" = [", b.value(), ", ", e.value(), ") of size ",
                                           shape()[d].value())
                            : "";
      ThrowInvalid(absl::StrCat("shrink: [", b.ToString(), ", ", e.ToString(), ")", now,
                                " of dim ", d, " of shape ", ShapeString(shape()),
                                "; expected 0 <= begin <= end <= size"));
    }
    out.push_back(e - b);
    same &= b == 0 && e == shape()[d];
    dims.push_back(b);
    dims.push_back(e);
  }
  if (same) return *this;
  return View(Ops::SHRINK, dims, {}, out);
}

Tensor Tensor::Slice(int axis, SymInt start_at, SymInt stop_at, int64_t step) const {
  int a = Axis(axis, "slice");
  if (step <= 0)
    ThrowInvalid(
        absl::StrCat("slice: step ", step, "; expected a positive step (use Flip to reverse)"));
  std::vector<std::pair<SymInt, SymInt>> r;
  for (int d = 0; d < ndim(); ++d) r.push_back({0, shape()[d]});
  const SymInt& size = shape()[a];
  if (start_at.is_symbolic() || stop_at.is_symbolic() || size.is_symbolic()) {
    if (step != 1)
      ThrowInvalid(absl::StrCat("slice: step ", step, " with a symbolic bound or dim (",
                                start_at.ToString(), ":", stop_at.ToString(), " of ",
                                size.ToString(), "); expected step 1"));
    auto norm = [&](const SymInt& i) { return !i.is_symbolic() && i.value() < 0 ? size + i : i; };
    r[a] = {norm(start_at), norm(stop_at)};
    return Shrink(r);
  }
  int64_t n = size.value();
  auto norm = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  int64_t start = norm(start_at.value());
  int64_t stop = std::max(norm(stop_at.value()), start);
  // every step-th element: a window of count*step elements viewed as (count, step), one
  // column: from start (column 0) or ending after the last element (column step-1) where
  // the dim holds such a window, else padded (a view that cannot be written through)
  int64_t len = stop - start, count = (len + step - 1) / step, column = 0;
  if (step > 1 && start + count * step <= n) {
    stop = start + count * step;
  } else if (int64_t end = start + (count - 1) * step + 1; step > 1 && end - count * step >= 0) {
    start = end - count * step;
    stop = end;
    column = step - 1;
  }
  r[a] = {start, stop};
  Tensor t = Shrink(r);
  if (step == 1) return t;
  std::vector<std::pair<SymInt, SymInt>> p(ndim(), {0, 0});
  p[a] = {0, count * step - (stop - start)};
  t = t.Pad(p);
  TensorShape s = t.shape();
  s[a] = count;
  s.insert(s.begin() + a + 1, step);
  t = t.Reshape(s);
  std::vector<std::pair<SymInt, SymInt>> take;
  for (size_t d = 0; d < s.size(); ++d) take.push_back({0, s[d]});
  take[a + 1] = {column, column + 1};
  return t.Shrink(take).Squeeze(a + 1);
}

Tensor Tensor::Flip(std::vector<int> axes) const {
  for (int& a : axes) a = Axis(a, "flip");
  if (axes.empty()) return *this;
  return View(Ops::FLIP, {}, Axes{axes}, shape());
}

Tensor Tensor::Unsqueeze(int axis) const {
  int n = ndim() + 1;
  if (axis < -n || axis >= n)
    ThrowInvalid(absl::StrCat("unsqueeze: axis ", axis, " for shape ", ShapeString(shape())));
  TensorShape s = shape();
  s.insert(s.begin() + (axis < 0 ? axis + n : axis), 1);
  return Reshape(s);
}

Tensor Tensor::Squeeze(int axis) const {
  int a = Axis(axis, "squeeze");
  if (shape()[a] != 1)
    ThrowInvalid(absl::StrCat("squeeze: dim ", a, " of shape ", ShapeString(shape()), " is not 1"));
  TensorShape s = shape();
  s.erase(s.begin() + a);
  return Reshape(s);
}

Tensor Tensor::Cat(const std::vector<Tensor>& ts, int axis) {
  if (ts.empty()) ThrowInvalid("cat: no tensors");
  int a = ts[0].Axis(axis, "cat");
  SymInt total = 0;
  for (const Tensor& t : ts) {
    if (t.ndim() != ts[0].ndim())
      ThrowInvalid("cat: shapes " + ShapeString(ts[0].shape()) + " and " + ShapeString(t.shape()) +
                   " have different ranks");
    for (int d = 0; d < t.ndim(); ++d)
      if (d != a && t.shape()[d] != ts[0].shape()[d])
        ThrowInvalid(absl::StrCat("cat: shapes ", ShapeString(ts[0].shape()), " and ",
                                  ShapeString(t.shape()), " differ outside axis ", a));
    total += t.shape()[a];
  }
  Tensor out;
  SymInt at = 0;
  for (const Tensor& t : ts) {
    std::vector<std::pair<SymInt, SymInt>> p(t.ndim(), {0, 0});
    p[a] = {at, total - at - t.shape()[a]};
    at += t.shape()[a];
    Tensor piece = t.Pad(p);
    out = !out ? piece : IsBool(t.dtype()) ? out.Maximum(piece) : out + piece;
  }
  return out;
}

Tensor Tensor::Stack(const std::vector<Tensor>& ts, int axis) {
  if (ts.empty()) ThrowInvalid("stack: no tensors");
  std::vector<Tensor> u;
  for (const Tensor& t : ts) {
    if (t.shape() != ts[0].shape())
      ThrowInvalid("stack: shapes " + ShapeString(ts[0].shape()) + " and " +
                   ShapeString(t.shape()) + " differ");
    u.push_back(t.Unsqueeze(axis));
  }
  return Cat(u, axis);
}

// ---- running and printing ----

Tensor& Tensor::Realize() {
  Data();  // (not a null one)
  ThrowIfError(Runtime::Get().Realize({data_}));
  return *this;
}

void Tensor::RealizeAll(const std::vector<Tensor*>& tensors) {
  std::vector<std::shared_ptr<LazyData>> d;
  for (Tensor* t : tensors) {
    t->Data();  // (not a null one)
    d.push_back(t->data_);
  }
  ThrowIfError(Runtime::Get().Realize(d));
}

namespace {

// As PyTorch prints: one format for the whole tensor: "2." when every value is integral,
// else 4 decimals, or scientific when some value is tiny or huge.
std::string FloatText(double x, char mode) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, mode == 'i' ? "%.0f." : mode == 'e' ? "%.4e" : "%.4f", x);
  return buf;
}

char FloatMode(const std::vector<double>& v) {
  bool integral = true, sci = false;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    integral &= x == std::floor(x) && std::abs(x) < 1e16;
    sci |= std::abs(x) >= 1e8 || (x != 0 && std::abs(x) < 1e-4);
  }
  return integral ? 'i' : sci ? 'e' : 'f';
}

}  // namespace

std::string Tensor::ToString() const {
  std::vector<double> v = ToVector<double>();
  char mode = FloatMode(v);
  std::ostringstream os;
  std::vector<int64_t> idx(ndim(), 0);
  std::function<void(int, int64_t&)> rec = [&](int d, int64_t& flat) {
    if (d == ndim()) {
      double x = v[flat++];
      if (IsBool(dtype()))
        os << (x != 0 ? "true" : "false");
      else if (IsFloat(dtype()))
        os << FloatText(x, mode);
      else
        os << static_cast<int64_t>(x);
      return;
    }
    os << "[";
    for (int64_t i = 0; i < shape()[d].value(); ++i) {
      if (i) os << (d + 1 == ndim() ? ", " : ",\n" + std::string(8 + d, ' '));
      rec(d + 1, flat);
    }
    os << "]";
  };
  int64_t flat = 0;
  os << "tensor(";
  rec(0, flat);
  os << ", dtype=" << DTypeName(dtype()) << ")";
  return os.str();
}

}  // namespace uopc
