// UOp: a node of uopc's IR. Immutable and hash-consed: building the same (op, dtype, src,
// arg) twice gives the same node, so structural equality is pointer equality and maps key
// on the pointer. Nodes are reference counted and leave the interner (a sharded,
// thread-safe hash set) when the last handle goes, so a program that builds a new graph
// every step does not grow memory.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"

#include "core/arg.h"
#include "core/dtype.h"
#include "core/ops.h"

namespace uopc {

class UOp;

/// The dtype an op's result has, derived from its sources; nullopt for ops whose dtype
/// is declared rather than derived (CONST, VAR, BUFFER, ALLOC, CAST, BITCAST).
std::optional<DType> DerivedDType(Ops op, absl::Span<const UOp> src);

/// A counted handle to an interned node. A default-constructed UOp is null.
class UOp {
 public:
  struct Node;
  /// Storage the bounds analysis (core/bounds) caches in each node; nothing else uses it.
  struct BoundsCache {
    std::atomic<bool> ready{false};
    std::atomic<int64_t> lo{0}, hi{0};
  };

  UOp() = default;
  UOp(const UOp& o) noexcept;
  UOp(UOp&& o) noexcept : n_(o.n_) { o.n_ = nullptr; }
  UOp& operator=(const UOp& o) noexcept;
  UOp& operator=(UOp&& o) noexcept;
  ~UOp();

  // ---- construction (all of it goes through the interner) ----
  /// The node (op, dtype, src, arg): the existing one if it was built before.
  static UOp Make(Ops op, DType dtype, absl::Span<const UOp> src = {}, Arg arg = {});
  /// Like Make, with the dtype derived from the sources (see DerivedDType).
  static UOp Derived(Ops op, absl::Span<const UOp> src, Arg arg = {});
  static UOp Derived(Ops op, std::initializer_list<UOp> src, Arg arg = {}) {
    return Derived(op, absl::MakeConstSpan(src.begin(), src.size()), std::move(arg));
  }

  /// A constant of `dtype`. The value is converted to the dtype first (integers wrap,
  /// floats round), so equal values make equal nodes.
  template <std::integral T>
  static UOp Const(DType dtype, T v) {
    if constexpr (std::same_as<T, bool>)
      return ConstBool(dtype, v);
    else
      return ConstInt(dtype, static_cast<int64_t>(v));
  }
  template <std::floating_point T>
  static UOp Const(DType dtype, T v) {
    return ConstFloat(dtype, static_cast<double>(v));
  }
  /// A constant from a CONST argument value (bool, int64 or double), converted to dtype.
  static UOp ConstFromArg(DType dtype, const Arg& value);
  static UOp ConstInt(DType dtype, int64_t v);
  static UOp ConstFloat(DType dtype, double v);
  static UOp ConstBool(DType dtype, bool v);
  /// An i32 constant.
  static UOp Int(int64_t v) { return ConstInt(DType::kI32, v); }

  /// A named i32 scalar declared to lie in [lo, hi], bound at launch.
  static UOp Var(std::string name, int64_t lo, int64_t hi);
  /// Kernel parameter `slot`: a buffer of `size` elements of `dtype`; at the tensor level,
  /// on `device`.
  static UOp Buffer(DType dtype, int slot, int64_t size, std::string device = "");
  /// Local storage (an accumulator) of `size` elements.
  static UOp Alloc(DType dtype, int slot, int64_t size);
  /// A loop `for (r = 0; r < end; r++)` with identity `idx`.
  static UOp Range(UOp end, int idx, RangeKind kind = RangeKind::kLoop);
  static UOp Range(int64_t end, int idx, RangeKind kind = RangeKind::kLoop) {
    return Range(Int(end), idx, kind);
  }
  static UOp Sink(absl::Span<const UOp> roots);
  static UOp Sink(std::initializer_list<UOp> roots) {
    return Sink(absl::MakeConstSpan(roots.begin(), roots.size()));
  }

  // ---- builders on this node ----
  UOp Index(UOp idx) const;
  UOp Index(int64_t idx) const { return Index(Int(idx)); }
  UOp Load() const;
  UOp Store(UOp value) const;
  /// Closes `ranges` around this statement.
  UOp End(std::initializer_list<UOp> ranges) const;
  /// This value, once `deps` are done.
  UOp After(std::initializer_list<UOp> deps) const;
  UOp Cast(DType dtype) const;
  UOp Bitcast(DType dtype) const;
  UOp FloorDiv(const UOp& d) const { return Derived(Ops::FLOORDIV, {*this, d}); }
  UOp FloorDiv(int64_t d) const { return FloorDiv(ConstInt(dtype(), d)); }
  UOp Mod(const UOp& d) const { return Derived(Ops::MOD, {*this, d}); }
  UOp Mod(int64_t d) const { return Mod(ConstInt(dtype(), d)); }
  UOp Lt(const UOp& o) const { return Derived(Ops::CMPLT, {*this, o}); }
  UOp Lt(int64_t o) const { return Lt(ConstInt(dtype(), o)); }
  UOp Ne(const UOp& o) const { return Derived(Ops::CMPNE, {*this, o}); }
  UOp Eq(const UOp& o) const { return Derived(Ops::CMPEQ, {*this, o}); }
  UOp Max(const UOp& o) const { return Derived(Ops::MAX, {*this, o}); }
  /// `this ? a : b` (this is the bool condition).
  UOp Where(const UOp& a, const UOp& b) const { return Derived(Ops::WHERE, {*this, a, b}); }
  /// The same node with other sources.
  UOp WithSrc(absl::Span<const UOp> src) const;

  // ---- access ----
  Ops op() const;
  DType dtype() const;
  const Arg& arg() const;
  absl::Span<const UOp> src() const;
  const UOp& src(size_t i) const { return src()[i]; }
  size_t hash() const;
  /// The node's identity (stable while any handle lives).
  const Node* get() const { return n_; }
  explicit operator bool() const { return n_ != nullptr; }
  bool operator==(const UOp& o) const { return n_ == o.n_; }
  bool is(Ops op) const { return n_ && this->op() == op; }
  /// The integer value of an integer or bool CONST.
  std::optional<int64_t> ConstIntValue() const;
  BoundsCache& bounds_cache() const;

  /// Every node reachable from this one, sources before users, each once.
  std::vector<UOp> Toposort() const;
  /// Number of nodes alive in the interner (all threads).
  static size_t LiveCount();

  template <typename H>
  friend H AbslHashValue(H h, const UOp& u) {
    return H::combine(std::move(h), u.n_);
  }

 private:
  explicit UOp(Node* n) : n_(n) {}  // adopts one reference
  friend class Interner;
  Node* n_ = nullptr;
};

UOp operator+(const UOp& a, const UOp& b);
UOp operator*(const UOp& a, const UOp& b);
/// `a - b` is `a + b*-1`: the IR has no SUB.
UOp operator-(const UOp& a, const UOp& b);
UOp operator-(const UOp& a);
UOp operator+(const UOp& a, int64_t b);
UOp operator*(const UOp& a, int64_t b);
UOp operator-(const UOp& a, int64_t b);

}  // namespace uopc
