// Tensor: elementwise math with broadcasting and promotion, reductions, and the nn
// functions built from them (matmul, softmax, cross entropy).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "frontend/autocast.h"
#include "frontend/tensor.h"

namespace uopc {
namespace {

TensorShape Broadcast(const std::vector<Tensor>& in, const char* name) {
  size_t rank = 0;
  for (const Tensor& t : in) rank = std::max(rank, t.shape().size());
  TensorShape out(rank, 1);
  for (const Tensor& t : in) {
    size_t off = rank - t.shape().size();
    for (size_t d = 0; d < t.shape().size(); ++d) {
      const SymInt& x = t.shape()[d];
      if (out[off + d] == 1)
        out[off + d] = x;
      else if (x != 1 && x != out[off + d]) {
        std::vector<std::string> shapes;
        for (const Tensor& u : in) shapes.push_back(ShapeString(u.shape()));
        ThrowInvalid(absl::StrCat(name, ": shapes ", absl::StrJoin(shapes, " and "),
                                  " do not broadcast; expected equal dims or 1 in each position"));
      }
    }
  }
  return out;
}

bool Integral(double v) { return std::floor(v) == v && std::abs(v) < 9e18; }

}  // namespace

Tensor Elementwise(Ops op, std::vector<Tensor> in, const char* name) {
  // one device; a tensor of constants alone, not realized, joins any
  Device* device = nullptr;
  for (const Tensor& t : in) {
    if ((!t.realized() && t.data()->constant) || t.device() == device) continue;
    if (device)
      ThrowInvalid(absl::StrCat(name, ": tensors on ", device->name(), " and ", t.device()->name(),
                                "; expected one device: move one with To(\"", device->name(),
                                "\") or To(\"", t.device()->name(), "\")"));
    device = t.device();
  }
  if (!device) device = in[0].device();
  // the values' common dtype (WHERE: not its condition)
  size_t first = op == Ops::WHERE ? 1 : 0;
  DType t = in[first].dtype();
  for (size_t i = first + 1; i < in.size(); ++i)
    t = PromoteTypes(t, in[i].dtype()).value_or(DType::kF32);
  if (IsFloatOnly(op) && !IsFloat(t)) t = DType::kF32;  // (core/ops.h: its operands are floats)
  if ((op == Ops::ADD || op == Ops::MUL) && IsBool(t)) t = DType::kI32;
  TensorShape shape = Broadcast(in, name);
  std::vector<UOp> src;
  std::vector<std::shared_ptr<LazyData>> keep;
  for (size_t i = 0; i < in.size(); ++i) {
    Tensor x = in[i];
    DType want = (op == Ops::WHERE && i == 0) ? DType::kBool : t;
    if (x.dtype() != want) x = op == Ops::WHERE && i == 0 ? x.Ne(x.Like(0)) : x.Cast(want);
    x = x.Expand(shape);
    src.push_back(x.uop());
    keep.push_back(x.data());
  }
  DType out = IsCompare(op) ? DType::kBool : t;
  return Tensor(UOp::Make(op, out, src), shape, out, device, std::move(keep));
}

Tensor Tensor::Like(double v) const {
  DType t = dtype();
  if (IsBool(t))
    t = Integral(v) ? DType::kI32 : DType::kF32;
  else if (!IsFloat(t) && !Integral(v))
    t = DType::kF32;
  return Scalar(v, t, device());
}

Tensor Tensor::operator+(const Tensor& o) const { return Elementwise(Ops::ADD, {*this, o}, "add"); }
Tensor Tensor::operator*(const Tensor& o) const { return Elementwise(Ops::MUL, {*this, o}, "mul"); }
Tensor Tensor::operator-(const Tensor& o) const { return *this + (-o); }
Tensor Tensor::operator-() const {
  return IsBool(dtype()) ? Cast(DType::kI32) * -1.0 : *this * -1.0;
}
Tensor Tensor::operator/(const Tensor& o) const {
  return Elementwise(Ops::FDIV, {*this, o}, "div");
}
Tensor Tensor::Lt(const Tensor& o) const { return Elementwise(Ops::CMPLT, {*this, o}, "lt"); }
Tensor Tensor::Eq(const Tensor& o) const { return Elementwise(Ops::CMPEQ, {*this, o}, "eq"); }
Tensor Tensor::Ne(const Tensor& o) const { return Elementwise(Ops::CMPNE, {*this, o}, "ne"); }
Tensor Tensor::Le(const Tensor& o) const { return Elementwise(Ops::OR, {Lt(o), Eq(o)}, "le"); }
Tensor Tensor::Where(const Tensor& a, const Tensor& b) const {
  return Elementwise(Ops::WHERE, {*this, a, b}, "where");
}
Tensor Tensor::Maximum(const Tensor& o) const {
  return Elementwise(Ops::MAX, {*this, o}, "maximum");
}

Tensor Tensor::Minimum(const Tensor& o) const {
  DType t = PromoteTypes(dtype(), o.dtype()).value_or(DType::kF32);
  if (IsFloat(t) || (IsInt(t) && !IsUnsigned(t))) return -((-*this).Maximum(-o));
  return Lt(o).Where(*this, o);
}

Tensor Tensor::Cast(DType t) const {
  if (t == dtype()) return *this;
  return Tensor(UOp::Make(Ops::CAST, t, {uop()}), shape(), t, device(), {data_});
}

Tensor Tensor::Bitcast(DType t) const {
  if (t == dtype()) return *this;
  if (DTypeSize(t) != DTypeSize(dtype()) || IsBool(t) || IsBool(dtype()))
    ThrowInvalid(absl::StrCat("bitcast: a tensor of ", DTypeName(dtype()), " ",
                              ShapeString(shape()), " to ", DTypeName(t),
                              "; expected a non-bool dtype of the same size (",
                              DTypeSize(dtype()), " bytes)"));
  return Tensor(UOp::Make(Ops::BITCAST, t, {uop()}), shape(), t, device(), {data_});
}

Tensor Tensor::Exp2() const { return Elementwise(Ops::EXP2, {*this}, "exp2"); }
Tensor Tensor::Log2() const { return Elementwise(Ops::LOG2, {*this}, "log2"); }
Tensor Tensor::Exp() const { return (*this * (1.0 / std::log(2.0))).Exp2(); }
Tensor Tensor::Log() const { return Log2() * std::log(2.0); }
Tensor Tensor::Sqrt() const { return Elementwise(Ops::SQRT, {*this}, "sqrt"); }
Tensor Tensor::Reciprocal() const { return Elementwise(Ops::RECIP, {*this}, "reciprocal"); }
Tensor Tensor::Sin() const { return Elementwise(Ops::SIN, {*this}, "sin"); }
Tensor Tensor::Cos() const {
  return (IsFloat(dtype()) ? *this : Float()).operator+(M_PI / 2).Sin();
}
// 1 / (1 + exp(-x)), its exponent at most 87: exp stays finite, so a saturated sigmoid's
// gradient is 0 (the reciprocal's gradient, 0, times exp's, which would be inf past 88.7: NaN).
// Below -87 the value is 1 / (1 + e^87) = 1.6e-38 (the smallest normal float is 1.2e-38).
Tensor Tensor::Sigmoid() const {
  return ((-Maximum(Like(-87.0))).Exp() + 1.0).Reciprocal();
}
Tensor Tensor::Tanh() const { return (*this * 2.0).Sigmoid() * 2.0 - 1.0; }
// (not a maximum with 0, whose gradient at the tie would be 0.5: PyTorch's is 0 there, and
// NaN stays NaN)
Tensor Tensor::Relu() const { return Le(Like(0)).Where(Like(0), *this); }
Tensor Tensor::Abs() const { return Maximum(-*this); }

Tensor Tensor::Gelu() const {  // the tanh approximation, as GPT-2
  const double k = std::sqrt(2.0 / M_PI);
  return *this * 0.5 * (((*this + *this * *this * *this * 0.044715) * k).Tanh() + 1.0);
}

Tensor Tensor::Pow(const Tensor& e) const { return (e * Log()).Exp(); }

Tensor Tensor::Pow(double e) const {
  if (e == 0) return Full(shape(), 1, IsFloat(dtype()) ? dtype() : DType::kF32, device());
  if (e == 0.5) return Sqrt();
  if (Integral(e) && std::abs(e) <= 8) {  // exact by repeated multiplication
    Tensor base = IsFloat(dtype()) ? *this : Float(), r = base;
    for (int i = 1; i < std::abs(e); ++i) r = r * base;
    return e < 0 ? r.Reciprocal() : r;
  }
  Tensor x = IsFloat(dtype()) ? *this : Float();
  // |x|^e = exp(e log |x|), with 0 where x is 0 for e > 1 taken off that path: log 0 = -inf
  // made the gradient there 0 / 0 (NaN) where it is 0 (PyTorch's)
  Tensor a = x.Abs(), zero = a.Eq(0);
  Tensor mag = e > 1 ? zero.Where(a.Like(0), (zero.Where(a.Like(1), a).Log() * e).Exp())
                     : (a.Log() * e).Exp();
  if (!Integral(e)) return x.Lt(0).Where(x.Like(NAN), mag);  // no real root of a negative
  bool odd = std::fmod(std::abs(e), 2.0) == 1.0;
  return odd ? x.Lt(0).Where(-mag, mag) : mag;
}

// ---- reductions ----

Tensor Tensor::Reduce(Ops op, std::vector<int> axes, bool keepdim, const char* name) const {
  if (axes.empty())
    for (int d = 0; d < ndim(); ++d) axes.push_back(d);
  std::vector<bool> seen(ndim(), false);
  for (int& a : axes) {
    a = Axis(a, name);
    if (seen[a]) ThrowInvalid(absl::StrCat(name, ": axis ", a, " twice"));
    seen[a] = true;
  }
  Tensor x = *this;
  if (op == Ops::ADD && IsBool(dtype())) x = Cast(DType::kI32);
  // halves sum in f32, rounded once (4,096 ones summed in bf16 would stop at 256)
  const bool half = (op == Ops::ADD || op == Ops::MUL) && IsHalf(dtype());
  if (half) x = Float();
  TensorShape kept = shape(), dropped;
  for (int d = 0; d < ndim(); ++d) {
    if (seen[d])
      kept[d] = 1;
    else
      dropped.push_back(shape()[d]);
  }
  std::sort(axes.begin(), axes.end());
  Tensor r(UOp::Derived(Ops::REDUCE, {x.uop()}, ReduceArg{op, axes}), kept, x.dtype(), device(),
           {x.data_});
  if (half) r = r.Cast(dtype());
  return keepdim ? r : r.Reshape(dropped);
}

Tensor Tensor::Sum(std::vector<int> axes, bool keepdim) const {
  return Reduce(Ops::ADD, std::move(axes), keepdim, "sum");
}
Tensor Tensor::Max(std::vector<int> axes, bool keepdim) const {
  return Reduce(Ops::MAX, std::move(axes), keepdim, "max");
}

Tensor Tensor::Min(std::vector<int> axes, bool keepdim) const {
  if (IsFloat(dtype()) || (IsInt(dtype()) && !IsUnsigned(dtype())))
    return -((-*this).Max(std::move(axes), keepdim));
  Tensor top = Full({}, static_cast<double>(IsBool(dtype()) ? 1 : DTypeMax(dtype())),
                    IsBool(dtype()) ? DType::kI32 : dtype(), device());
  Tensor x = IsBool(dtype()) ? Cast(DType::kI32) : *this;
  return (top - (top - x).Max(std::move(axes), keepdim)).Cast(dtype());
}

namespace {

// How many elements of `x` each element of its reduction `r` is computed from (a symbolic
// count for a reduction over a symbolic dim).
SymInt ReducedCount(const Tensor& x, const Tensor& r) {
  SymInt out = r.numel();
  if (out.value() == 0) return 0;
  return x.numel().FloorDiv(out);
}

// `s` divided by the count `n`: a number, or the count's expression.
Tensor DivideByCount(const Tensor& s, const SymInt& n) {
  if (!n.is_symbolic()) return s / static_cast<double>(n.value());
  return s / Tensor::FromSymInt(n, s.dtype(), s.device());
}

}  // namespace

Tensor Tensor::Mean(std::vector<int> axes, bool keepdim) const {
  Tensor s = (IsFloat(dtype()) ? *this : Float()).Sum(axes, keepdim);
  return DivideByCount(s, ReducedCount(*this, s));
}

Tensor Tensor::Var(std::vector<int> axes, bool keepdim, int correction) const {
  Tensor x = IsFloat(dtype()) ? *this : Float();
  Tensor d = x - x.Mean(axes, true);
  Tensor s = (d * d).Sum(axes, keepdim);
  SymInt n = ReducedCount(*this, s) - correction;
  return DivideByCount(s, n.is_symbolic() ? n : SymInt(std::max<int64_t>(n.value(), 0)));
}

Tensor Tensor::Argmax(int axis, bool keepdim) const {
  int a = Axis(axis, "argmax");
  SymInt n = shape()[a];
  TensorShape s(ndim(), 1);
  s[a] = n;
  Tensor idx = Arange(0, static_cast<double>(n.max()), 1, device()).Slice(0, 0, n).Reshape(s);
  Tensor first = Eq(Max({a}, true)).Where(idx, idx.Like(static_cast<double>(n.max())));
  return first.Min({a}, keepdim);
}

// ---- linear algebra and nn ----

Tensor Tensor::Matmul(const Tensor& o) const {
  if (ndim() == 0 || o.ndim() == 0)
    ThrowInvalid("matmul: a 0-d operand; expected at least 1 dim each");
  Tensor a = ndim() == 1 ? Unsqueeze(0) : *this, b = o.ndim() == 1 ? o.Unsqueeze(-1) : o;
  SymInt k = a.shape().back();
  if (b.shape()[b.ndim() - 2] != k)
    ThrowInvalid(absl::StrCat("matmul: shapes ", ShapeString(shape()), " and ",
                              ShapeString(o.shape()), "; expected the last dim of the first (",
                              k.ToString(), ") to equal the second-to-last of the second (",
                              b.shape()[b.ndim() - 2].ToString(), ")"));
  // halves (both, or f32 operands rounded under an Autocast): exact products summed in f32
  // (8 or 11 bits of mantissa each), rounded to the half once
  std::optional<DType> low;
  if (a.dtype() == b.dtype() && IsHalf(a.dtype())) low = a.dtype();
  if (std::optional<DType> policy = Autocast::Current();
      policy && IsFloat(a.dtype()) && IsFloat(b.dtype()))
    low = policy, a = a.Cast(*low), b = b.Cast(*low);
  if (low) a = a.Float(), b = b.Float();
  // (..., M, K, 1) * (..., 1, K, N) summed over K
  Tensor r = (a.Unsqueeze(-1) * b.Unsqueeze(-3)).Sum({-2});
  if (low) r = r.Cast(*low);
  if (ndim() == 1) r = r.Squeeze(-2);
  if (o.ndim() == 1) r = r.Squeeze(-1);
  return r;
}

// (halves compute in f32 and give their dtype back)
Tensor Tensor::Softmax(int axis) const {
  Tensor x = IsFloat(dtype()) && !IsHalf(dtype()) ? *this : Float();
  Tensor e = (x - x.Max({axis}, true).Detach()).Exp();
  Tensor p = e / e.Sum({axis}, true);
  return IsHalf(dtype()) ? p.Cast(dtype()) : p;
}

Tensor Tensor::LogSoftmax(int axis) const {
  Tensor x = IsFloat(dtype()) && !IsHalf(dtype()) ? *this : Float();
  Tensor shifted = x - x.Max({axis}, true).Detach();
  Tensor l = shifted - shifted.Exp().Sum({axis}, true).Log();
  return IsHalf(dtype()) ? l.Cast(dtype()) : l;
}

Tensor Tensor::OneHot(int64_t num_classes) const {
  if (IsFloat(dtype()))
    ThrowInvalid("one_hot: indices of dtype " + std::string(DTypeName(dtype())) +
                 "; expected an integer dtype");
  return Unsqueeze(-1)
      .Eq(Arange(0, static_cast<double>(num_classes), 1, device()).Cast(dtype()))
      .Cast(DType::kI32);
}

// ---- indexing by data ----
// Each is a one-hot sum over the indexed dim, which passes/reduce_collapse.h makes a load at
// the index (and a sum into rows picked by an index, on a CPU, a scatter-add).

namespace {

// 0, 1, ..., n-1 along axis `at` of a rank-`rank` tensor (1 elsewhere), as `dtype` (n may
// be symbolic: the first n of its largest value).
Tensor IotaAlong(const SymInt& n, int at, int rank, DType dtype, Device* device) {
  TensorShape s(rank, 1);
  s[at] = n;
  return Tensor::Arange(0, static_cast<double>(n.max()), 1, device)
      .Slice(0, 0, n)
      .Cast(dtype)
      .Reshape(s);
}

// The unsigned dtype of `t`'s width (t an integer dtype).
DType UnsignedOf(DType t) {
  switch (DTypeSize(t)) {
    case 1: return DType::kU8;
    case 2: return DType::kU16;
    case 4: return DType::kU32;
    default: return DType::kU64;
  }
}

// `out`, with the run-time check of `index` against a dim of size `n` (frontend/
// index_check.h): `op` of `self` along `dim`.
Tensor WithIndexCheck(Tensor out, const Tensor& index, const SymInt& n, const char* op, int dim,
                      const Tensor& self) {
  if (index.numel() == SymInt(0)) return out;  // (no index: nothing to check)
  const Tensor largest = index.Bitcast(UnsignedOf(index.dtype())).Max();
  out.data()->index_checks.push_back(
      {largest.data(), n, !IsUnsigned(index.dtype()),
       absl::StrCat(op, ": dim ", dim, " of ", DTypeName(self.dtype()), " ",
                    ShapeString(self.shape()))});
  return out;
}

// Gather of `self` (its dim `d`, as `dim` was given), `op` naming it in errors; `checked`
// holds the values of `index` (IndexSelect's, before they are expanded), checked at run time.
Tensor GatherAlong(const Tensor& self, int d, int dim, const Tensor& index, const char* op,
                   const Tensor& checked) {
  const SymInt n = self.shape()[d];
  const int rank = self.ndim();
  bool fits = index.ndim() == rank;
  for (int a = 0; fits && a < rank; ++a)
    fits = a == d || index.shape()[a] == self.shape()[a] ||
           (!index.shape()[a].is_symbolic() && !self.shape()[a].is_symbolic() &&
            index.shape()[a].value() <= self.shape()[a].value());
  if (!IsInt(index.dtype()) || !fits)
    ThrowInvalid(absl::StrCat(op, ": dim ", dim, " of ", DTypeName(self.dtype()), " ",
                              ShapeString(self.shape()), " by an index of ",
                              DTypeName(index.dtype()), " ", ShapeString(index.shape()),
                              "; expected an integer index of the same rank, no larger on the "
                              "other dims"));
  std::vector<std::pair<SymInt, SymInt>> extent;
  for (int a = 0; a < rank; ++a) extent.push_back({0, a == d ? n : index.shape()[a]});
  const Tensor x = IsBool(self.dtype()) ? self.Cast(DType::kI32) : self;
  // (..., i, k, ...): index[..., i, ...] == k, times x[..., k, ...], summed over k
  const Tensor picks =
      index.Unsqueeze(d + 1).Eq(IotaAlong(n, d + 1, rank + 1, index.dtype(), self.device()));
  const Tensor out = (picks.Cast(x.dtype()) * x.Shrink(extent).Unsqueeze(d)).Sum({d + 1});
  // (the check on the picks, which the gradient reads too)
  WithIndexCheck(picks, checked, n, op, dim, self);
  return IsBool(self.dtype()) ? out.Cast(DType::kBool) : out;
}

}  // namespace

Tensor Tensor::Gather(int dim, const Tensor& index) const {
  return GatherAlong(*this, Axis(dim, "gather"), dim, index, "gather", index);
}

Tensor Tensor::IndexSelect(int dim, const Tensor& index) const {
  const int d = Axis(dim, "index_select");
  if (index.ndim() != 1 || !IsInt(index.dtype()))
    ThrowInvalid(absl::StrCat("index_select: dim ", dim, " of ", ShapeString(shape()),
                              " by an index of ", DTypeName(index.dtype()), " ",
                              ShapeString(index.shape()), "; expected a 1-D integer index"));
  TensorShape along(ndim(), 1), out = shape();
  along[d] = out[d] = index.shape()[0];
  return GatherAlong(*this, d, dim, index.Reshape(along).Expand(out), "index_select", index);
}

namespace {

// (..., k, i, ...): index[..., i, ...] == k, for k along `dim` of `self`, after checking
// ScatterAdd's and Scatter's shapes (`op` names which).
Tensor ScatterPicks(const Tensor& self, int d, int dim, const Tensor& index, const Tensor& src,
                    const char* op) {
  bool fits = index.shape() == src.shape() && index.ndim() == self.ndim() &&
              src.dtype() == self.dtype();
  for (int a = 0; fits && a < self.ndim(); ++a)
    fits = a == d || index.shape()[a] == self.shape()[a];
  if (!IsInt(index.dtype()) || !fits)
    ThrowInvalid(absl::StrCat(op, ": into dim ", dim, " of ", DTypeName(self.dtype()), " ",
                              ShapeString(self.shape()), " at an index of ",
                              DTypeName(index.dtype()), " ", ShapeString(index.shape()),
                              ", values of ", DTypeName(src.dtype()), " ",
                              ShapeString(src.shape()),
                              "; expected an integer index and values of one shape, of this "
                              "tensor's rank, dtype and sizes on the other dims"));
  return WithIndexCheck(index.Unsqueeze(d).Eq(IotaAlong(self.shape()[d], d, self.ndim() + 1,
                                                        index.dtype(), self.device())),
                        index, self.shape()[d], op, dim, self);
}

}  // namespace

Tensor Tensor::Scatter(int dim, const Tensor& index, const Tensor& src) const {
  const int d = Axis(dim, "scatter");
  const Tensor picks = ScatterPicks(*this, d, dim, index, src, "scatter");
  const Tensor hits = picks.Cast(DType::kI32).Sum({d + 1});
  const Tensor x = IsBool(dtype()) ? Cast(DType::kI32) : *this;
  const Tensor sum = (picks.Cast(x.dtype()) * src.Cast(x.dtype()).Unsqueeze(d)).Sum({d + 1});
  const Tensor out = hits.Gt(0).Where(sum, x);
  return IsBool(dtype()) ? out.Cast(DType::kBool) : out;
}

void Tensor::ScatterInPlace(int dim, const Tensor& index, const Tensor& src) {
  Unsqueeze(0).Assign(Scatter(dim, index, src).Unsqueeze(0));
}

Tensor Tensor::ScatterAdd(int dim, const Tensor& index, const Tensor& src) const {
  const int d = Axis(dim, "scatter_add");
  // (..., k, i, ...): index[..., i, ...] == k, times src[..., i, ...], summed over i
  const Tensor picks = ScatterPicks(*this, d, dim, index, src, "scatter_add");
  return *this + (picks.Cast(dtype()) * src.Unsqueeze(d)).Sum({d + 1});
}

void Tensor::ScatterAddInPlace(int dim, const Tensor& index, const Tensor& src) {
  // (through a view of the whole tensor: Assign writes a view in place, and kernelize lets
  // a value that reads each element only where it writes it be computed in place)
  Unsqueeze(0).Assign(ScatterAdd(dim, index, src).Unsqueeze(0));
}

Tensor Tensor::CrossEntropy(const Tensor& targets) const {
  if (ndim() != 2 || targets.ndim() != 1 || targets.shape()[0] != shape()[0])
    ThrowInvalid(absl::StrCat("cross_entropy: logits ", ShapeString(shape()), " and targets ",
                              ShapeString(targets.shape()), "; expected (N, C) and (N)"));
  if (shape()[1].is_symbolic())
    ThrowInvalid("cross_entropy: logits " + ShapeString(shape()) +
                 " with a symbolic number of classes; expected a number");
  // (in f32 whatever the logits' dtype: the loss, its softmax and their gradients)
  const Tensor x = IsHalf(dtype()) ? Float() : *this;
  const Tensor index = targets.Unsqueeze(1);
  Tensor picked = GatherAlong(x.LogSoftmax(-1), 1, 1, index, "cross_entropy", index);
  return -picked.Mean();
}

}  // namespace uopc
