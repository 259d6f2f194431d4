// Tensor: the lazy tensor of uopc. Every op records a node in a UOp graph and checks its
// shapes and dtypes at once (a bad op throws uopc::Error naming the op and the shapes);
// nothing runs until Realize() (or reading the data back), which lowers the graph to a plan
// of fused kernels, looked up by structure in the plan cache, and runs it on the device.
//
//   Tensor a = Tensor::Randn({4, 8}), b = Tensor::Ones({8});
//   Tensor y = (a * b + 1.0f).Relu().Sum({1});
//   std::vector<float> v = y.ToVector<float>();
//
// Broadcasting and dtype promotion follow numpy/PyTorch: shapes align on the right, a dim
// of 1 stretches; bool < ints < floats, and a C++ number joins a tensor's dtype (1.5 with
// an int tensor gives f32). A graph is built by one thread at a time.
//
// Devices, as PyTorch has them: every tensor lives on a device ("CPU", "CPU:1", ...), given
// when it is created (DefaultDevice() otherwise); To() moves it (a COPY in the graph), and
// an op on tensors of two devices is an error that says so, never a silent copy. A tensor
// computed from constants alone (a C++ number, Scalar, Full, Zeros), not realized, holds
// no data anywhere and joins any device.
//
// In a job of several processes, devices of other ranks have names too ("rank1/CPU:0",
// devices/registry.h), and every rank runs the same program: a tensor on another rank's
// device holds no data here (its rank holds it), and a COPY to or from one is a message
// between the ranks, so pipeline stages on different processes are one graph.
//
//   Tensor a = Tensor::Randn({4, 8}, DType::kF32, "CPU:1");
//   Tensor b = (a * 2).To("CPU:0") + Tensor::Ones({4, 8});
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/uop.h"
#include "devices/buffer.h"
#include "devices/device.h"
#include "frontend/error.h"
#include "frontend/index_check.h"
#include "frontend/sym_int.h"

namespace uopc {

/// A shape: plain numbers, or symbolic dims (frontend/sym_int.h).
using TensorShape = std::vector<SymInt>;

/// A device as Tensor calls take it: by name ("CPU", "CPU:1", "cpu:1") or as a Device*;
/// none (the default) is DefaultDevice(). An unknown name throws, listing the devices.
class DeviceRef {
 public:
  DeviceRef() = default;
  DeviceRef(std::nullptr_t) {}                                  // NOLINT: implicit by design
  DeviceRef(Device* device) : device_(device) {}                // NOLINT
  DeviceRef(const char* name) : name_(name) {}                  // NOLINT
  DeviceRef(std::string name) : name_(std::move(name)) {}       // NOLINT
  /// The device (looked up by name if need be).
  Device* get() const;

 private:
  Device* device_ = nullptr;
  std::string name_;
};

/// The tensor's lazy state, shared by its copies: its graph node, and once realized its
/// buffer (the graph node is then a view of that buffer).
struct LazyData {
  UOp uop;
  TensorShape shape;
  DType dtype = DType::kF32;
  Device* device = nullptr;
  Buffer buffer;                                // set once realized
  std::vector<std::shared_ptr<LazyData>> srcs;  // inputs that keep their buffers alive
  std::shared_ptr<const VarBindings> vars;      // the VARs its graph reads, with their values
  bool requires_grad = false;
  bool constant = false;  // computed from constants alone, no data yet: it joins any device
  UOp forward;                     // the expression it was computed by (== uop until realized)
  std::shared_ptr<LazyData> grad;  // accumulated by Backward
  // Pending in-place writes (Assign on a view): uop is then AFTER(...AFTER(base_view, ASSIGN)
  // ..., ASSIGN), the buffer once they are done; base_view is the plain view of the buffer,
  // and written_from keeps what the written values are computed from.
  UOp base_view;
  std::vector<std::shared_ptr<LazyData>> written_from;
  // The bounds of the indices it reads by (Gather and the like), checked by the plan that
  // computes it (frontend/index_check.h); dropped once checked.
  std::vector<IndexCheck> index_checks;
};

class Tensor {
 public:
  Tensor() = default;

  // ---- creation ----
  /// A tensor of `shape` holding `data` (row-major), converted to `dtype`.
  template <typename T>
  static Tensor FromVector(const std::vector<T>& data, TensorShape shape,
                           DType dtype = DefaultDType<T>(), DeviceRef device = {});
  /// A 0-d tensor (a constant: until realized, it joins tensors of any device).
  static Tensor Scalar(double value, DType dtype = DType::kF32, DeviceRef device = {});
  static Tensor Full(TensorShape shape, double value, DType dtype = DType::kF32,
                     DeviceRef device = {});
  static Tensor Zeros(TensorShape shape, DType dtype = DType::kF32, DeviceRef device = {}) {
    return Full(std::move(shape), 0, dtype, std::move(device));
  }
  static Tensor Ones(TensorShape shape, DType dtype = DType::kF32, DeviceRef device = {}) {
    return Full(std::move(shape), 1, dtype, std::move(device));
  }
  /// A tensor over `buffer` (of its dtype and device, laid out for MaxShape(shape)).
  static Tensor FromBuffer(Buffer buffer, TensorShape shape);
  /// A 0-d tensor holding the value of `n` (for a symbolic n, its expression: the graph
  /// reads the VARs, so it is computed anew for each value).
  static Tensor FromSymInt(const SymInt& n, DType dtype = DType::kI32, DeviceRef device = {});
  /// [start, stop) by step, as i32 (f32 when any argument is fractional).
  static Tensor Arange(double stop) { return Arange(0, stop, 1); }
  static Tensor Arange(double start, double stop, double step = 1, DeviceRef device = {});
  /// The n x n identity.
  static Tensor Eye(int64_t n, DType dtype = DType::kF32, DeviceRef device = {});
  /// Uniform [0, 1), standard normal, and integers in [lo, hi), from the seeded stream.
  static Tensor Rand(TensorShape shape, DType dtype = DType::kF32, DeviceRef device = {});
  static Tensor Randn(TensorShape shape, DType dtype = DType::kF32, DeviceRef device = {});
  static Tensor Randint(int64_t lo, int64_t hi, TensorShape shape, DeviceRef device = {});
  static void ManualSeed(uint64_t seed);

  // ---- what it is ----
  const TensorShape& shape() const { return Data().shape; }
  SymInt shape(int axis) const;
  int ndim() const { return static_cast<int>(Data().shape.size()); }
  SymInt numel() const;
  DType dtype() const { return Data().dtype; }
  Device* device() const { return Data().device; }
  /// The lazy graph of this tensor (a BUFFER view once realized).
  const UOp& uop() const { return Data().uop; }
  bool realized() const { return static_cast<bool>(Data().buffer); }
  explicit operator bool() const { return data_ != nullptr; }
  const std::shared_ptr<LazyData>& data() const { return data_; }

  // ---- elementwise, with broadcasting and promotion ----
  Tensor operator+(const Tensor& o) const;
  Tensor operator-(const Tensor& o) const;
  Tensor operator*(const Tensor& o) const;
  Tensor operator/(const Tensor& o) const;
  Tensor operator-() const;
  Tensor operator+(double v) const { return *this + Like(v); }
  Tensor operator-(double v) const { return *this - Like(v); }
  Tensor operator*(double v) const { return *this * Like(v); }
  Tensor operator/(double v) const { return *this / Like(v); }
  Tensor Lt(const Tensor& o) const;
  Tensor Gt(const Tensor& o) const { return o.Lt(*this); }
  Tensor Le(const Tensor& o) const;
  Tensor Ge(const Tensor& o) const { return o.Le(*this); }
  Tensor Eq(const Tensor& o) const;
  Tensor Ne(const Tensor& o) const;
  Tensor Lt(double v) const { return Lt(Like(v)); }
  Tensor Gt(double v) const { return Gt(Like(v)); }
  Tensor Eq(double v) const { return Eq(Like(v)); }
  /// `this ? a : b`, this being a bool tensor.
  Tensor Where(const Tensor& a, const Tensor& b) const;
  Tensor Where(double a, const Tensor& b) const { return Where(b.Like(a), b); }
  Tensor Where(const Tensor& a, double b) const { return Where(a, a.Like(b)); }
  Tensor Maximum(const Tensor& o) const;
  Tensor Minimum(const Tensor& o) const;
  Tensor Pow(const Tensor& exponent) const;
  Tensor Pow(double exponent) const;
  Tensor Exp() const;
  Tensor Log() const;
  Tensor Exp2() const;
  Tensor Log2() const;
  Tensor Sqrt() const;
  Tensor Rsqrt() const { return Sqrt().Reciprocal(); }
  Tensor Reciprocal() const;
  Tensor Sin() const;
  Tensor Cos() const;
  Tensor Tanh() const;
  Tensor Sigmoid() const;
  Tensor Relu() const;
  Tensor Gelu() const;
  Tensor Abs() const;
  Tensor Square() const { return *this * *this; }
  Tensor Cast(DType dtype) const;
  Tensor Float() const { return Cast(DType::kF32); }
  /// The same bits read as `dtype`, of the same size (PyTorch's view(dtype)): f32 <-> u32,
  /// bf16 <-> u16, ...
  Tensor Bitcast(DType dtype) const;

  // ---- reductions (axes may be negative; empty axes: all) ----
  Tensor Sum(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor Max(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor Min(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor Mean(std::vector<int> axes = {}, bool keepdim = false) const;
  /// Variance with `correction` (1: the unbiased estimate, as PyTorch).
  Tensor Var(std::vector<int> axes = {}, bool keepdim = false, int correction = 1) const;
  /// Index of the first maximum along `axis` (i32).
  Tensor Argmax(int axis, bool keepdim = false) const;

  // ---- devices ----
  /// This tensor on `device`: itself if it is there already, else a copy (lazy, like every
  /// op; the gradient flows back through it).
  Tensor To(DeviceRef device) const;
  /// What the ranks of a process group compute from this tensor (core/arg.h: an
  /// all-reduce, all-gather or reduce-scatter, with its gradient's partner); lazy and
  /// differentiable. distributed/graph_collectives.h names the common ones.
  Tensor Collective(const CollectiveArg& c) const;

  // ---- movement ----
  /// One dim may be -1 (inferred).
  Tensor Reshape(TensorShape shape) const;
  Tensor Permute(std::vector<int> order) const;
  Tensor Transpose(int a = -2, int b = -1) const;
  Tensor Expand(TensorShape shape) const;
  /// pads[d] = {before, after} for each dim; the new elements are `value`.
  Tensor Pad(std::vector<std::pair<SymInt, SymInt>> pads, double value = 0) const;
  /// ranges[d] = [begin, end) for each dim.
  Tensor Shrink(std::vector<std::pair<SymInt, SymInt>> ranges) const;
  /// Python-style slice of one axis: negative indices count from the end; step > 0. A
  /// symbolic bound is taken as it is (no negative index, no clamping; step 1).
  Tensor Slice(int axis, SymInt start, SymInt stop, int64_t step = 1) const;
  Tensor Flip(std::vector<int> axes) const;
  Tensor Unsqueeze(int axis) const;
  Tensor Squeeze(int axis) const;
  Tensor Flatten() const { return Reshape({numel()}); }
  static Tensor Cat(const std::vector<Tensor>& tensors, int axis = 0);
  static Tensor Stack(const std::vector<Tensor>& tensors, int axis = 0);

  // ---- linear algebra and nn functions ----
  /// Batched matmul with broadcasting of the batch dims; 1-D operands as in numpy.
  Tensor Matmul(const Tensor& o) const;
  Tensor Softmax(int axis = -1) const;
  Tensor LogSoftmax(int axis = -1) const;
  /// Mean cross entropy of logits (N, C) against class indices (N) of an integer dtype.
  Tensor CrossEntropy(const Tensor& targets) const;
  /// (..., num_classes) with 1 at each index (i32).
  Tensor OneHot(int64_t num_classes) const;

  // ---- indexing by data (PyTorch's meanings; autograd: the gradient of a gather is a
  // scatter-add, of a scatter-add a gather). An index outside the dim is an OUT_OF_RANGE
  // error when the plan runs, naming the op, the tensor and the index (frontend/
  // index_check.h); nothing is read or written there (it reads 0 and adds nowhere) ----
  /// out[i][j] = self[index[i][j]][j] (dim 0; likewise for any dim): index has this
  /// tensor's rank, an integer dtype and, on the other dims, at most its sizes.
  Tensor Gather(int dim, const Tensor& index) const;
  /// The slices at `index` (1-D, integer) along `dim`: out[..., i, ...] = self[..., index[i], ...].
  Tensor IndexSelect(int dim, const Tensor& index) const;
  /// This tensor with src[i][j] added at [index[i][j]][j] (dim 0; likewise for any dim):
  /// index and src of one shape, this tensor's rank and, on the other dims, its sizes.
  Tensor ScatterAdd(int dim, const Tensor& index, const Tensor& src) const;
  /// This tensor with src[i][j] at [index[i][j]][j] (dim 0; likewise for any dim; PyTorch's
  /// scatter): shapes as ScatterAdd's; of indices that repeat, which value lands is
  /// unspecified, as in PyTorch.
  Tensor Scatter(int dim, const Tensor& index, const Tensor& src) const;
  /// ScatterAdd and Scatter in place (PyTorch's scatter_add_ and scatter_), lazily, as Assign
  /// on a view writes. On a CPU they cost what `index` has, not what this tensor has: a KV
  /// cache's new rows written into its pool.
  void ScatterAddInPlace(int dim, const Tensor& index, const Tensor& src);
  void ScatterInPlace(int dim, const Tensor& index, const Tensor& src);

  // ---- autograd ----
  /// Marks this tensor as a parameter (realizing it, and dropping its history): Backward
  /// computes its gradient.
  Tensor& RequiresGrad(bool on = true);
  bool requires_grad() const { return Data().requires_grad; }
  /// The accumulated gradient (a null Tensor if there is none).
  Tensor grad() const;
  void ZeroGrad() { Data().grad.reset(); }
  /// Replaces the gradient (what gradient clipping does).
  void SetGrad(const Tensor& g) { Data().grad = g.data_; }
  /// From a scalar loss: accumulates d(loss)/d(t) into t.grad() for every tensor t that
  /// requires grad and that the loss depends on. Lazy: nothing runs until the gradients
  /// (or what is computed from them) are realized.
  void Backward() const;
  /// This tensor without its history (what an optimizer updates from).
  Tensor Detach() const;
  /// Replaces this tensor's contents with `value` (same shape and dtype), realized on this
  /// tensor's device (copied there if need be, as PyTorch's copy_); keeps requires_grad,
  /// drops history and gradient. What an optimizer step does to a parameter.
  ///
  /// On a view (reshape, permute, shrink, slice, flip of a tensor), it writes in place: the
  /// viewed tensor's buffer is updated where the view lies and nowhere else, with no copy.
  /// Lazily, like every op: the write is done by the next plan that reads the viewed tensor
  /// (or realizes it), together with what that plan computes; what is built from the tensor
  /// after the Assign reads the new contents, what was built before reads the old ones
  /// when it is realized with the write (the write waits for it), the current ones after.
  ///   cache.Slice(2, pos, pos + T).Assign(k);          // no work yet
  ///   Tensor keys = cache.Slice(2, 0, pos + T);         // reads k at [pos, pos + T)
  ///   att.Realize();                                    // one plan: the write, then attention
  void Assign(const Tensor& value);

  // ---- running it ----
  /// Runs what this tensor needs; a no-op once realized.
  Tensor& Realize();
  /// Realizes several tensors with one plan.
  static void RealizeAll(const std::vector<Tensor*>& tensors);
  /// The data on the host, converted to T.
  template <typename T>
  std::vector<T> ToVector() const;
  template <typename T>
  T Item() const;
  /// "tensor([[1., 2.], [3., 4.]], dtype=f32)"
  std::string ToString() const;

  template <typename T>
  static constexpr DType DefaultDType() {
    if constexpr (std::is_same_v<T, bool>)
      return DType::kBool;
    else if constexpr (std::is_same_v<T, double>)
      return DType::kF64;
    else if constexpr (std::is_floating_point_v<T>)
      return DType::kF32;
    else if constexpr (std::is_same_v<T, int64_t>)
      return DType::kI64;
    else if constexpr (std::is_same_v<T, uint8_t>)
      return DType::kU8;
    else
      return DType::kI32;
  }

  // internal: a tensor over a node, keeping `srcs` alive
  Tensor(UOp uop, TensorShape shape, DType dtype, Device* device,
         std::vector<std::shared_ptr<LazyData>> srcs);

 private:
  static Tensor FromBytes(const void* bytes, DType dtype, TensorShape shape, Device* device);
  std::vector<uint8_t> HostBytes() const;  // the data, realized, row-major
  /// A C++ number as a tensor of this tensor's kind (weakly typed).
  Tensor Like(double v) const;
  Tensor Reduce(Ops op, std::vector<int> axes, bool keepdim, const char* name) const;
  int Axis(int axis, const char* op) const;  // normalized, checked
  Tensor View(Ops op, std::vector<SymInt> dims, Arg arg, TensorShape shape) const;

  friend Tensor Elementwise(Ops op, std::vector<Tensor> in, const char* name);
  /// The lazy state; a clear error for a null Tensor (default-made, or a grad() that is none).
  LazyData& Data() const {
    if (!data_) ThrowNull();
    return *data_;
  }
  [[noreturn]] static void ThrowNull();
  std::shared_ptr<LazyData> data_;
};

/// The result of `op` applied to `in` after broadcasting and promotion (used by Tensor).
Tensor Elementwise(Ops op, std::vector<Tensor> in, const char* name);
/// "(2, 3)", "(2, T, 64)"
std::string ShapeString(const TensorShape& s);
/// Each dim at its largest value: a realized tensor of a symbolic shape lies in a buffer
/// laid out for this shape (row-major), its elements at the start of each dim.
std::vector<int64_t> MaxShape(const TensorShape& s);
/// The view of `buffer` (a BUFFER node) that is a realized tensor of shape `s`.
UOp BufferView(const UOp& buffer, const TensorShape& s);
/// The device tensors go to by default (UOPC_DEVICES, else the first found).
Device* DefaultDevice();

inline Tensor operator+(double v, const Tensor& t) { return t + v; }
inline Tensor operator*(double v, const Tensor& t) { return t * v; }
inline Tensor operator-(double v, const Tensor& t) { return -t + v; }

}  // namespace uopc

#include "frontend/tensor_inl.h"
