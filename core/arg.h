// The argument of a UOp: a small closed variant (a constant's value, a buffer's slot and
// size, a VAR's name and bounds, a RANGE's index and kind, a REDUCE's op and axes, axes of
// a PERMUTE/FLIP, a COPY's target device, a COLLECTIVE's group and kinds). Equality is exact
// (floats compare by bits, so 0.0 and -0.0 are different constants and NaN equals itself) and
// hashing agrees with it.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"

#include "core/ops.h"

namespace uopc {

/// BUFFER and ALLOC: which kernel parameter (or local slot) and how many elements. A
/// tensor-level BUFFER also names the device whose memory holds it ("CPU:1"); a kernel's
/// buffers name none (a kernel is the same on every device). An ALLOC's names the memory it
/// lives in: none for a thread's own (registers), kSharedMemory for one a block of threads
/// shares (a GPU's shared memory; where a backend runs a block's threads in turn, one array a
/// block), which its threads exchange values through across a BARRIER; or kWarpRegisters for
/// a value each thread of a block holds (a register) and its warp exchanges (shuffles): in a
/// local range, thread l stores element l and, after a BARRIER, reads element l or (l + c) %
/// size for a constant 0 < c < the warp, what lane + c holds; where lane + c passes the
/// warp, what it reads is unspecified (a GPU's shuffle gives the thread's own).
inline constexpr absl::string_view kSharedMemory = "shared";
inline constexpr absl::string_view kWarpRegisters = "warp";
struct ParamArg {
  int slot = 0;
  int64_t size = 0;
  std::string device;
  bool operator==(const ParamArg&) const = default;
};

/// VAR: a named i32 scalar whose value is bound at launch, declared to lie in [lo, hi].
struct VarArg {
  std::string name;
  int64_t lo = 0, hi = 0;
  bool operator==(const VarArg&) const = default;
};

#define UOPC_FOR_EACH_RANGE_KIND(X) \
  X(kLoop, "loop")                  \
  X(kReduce, "reduce")              \
  X(kGlobal, "global") X(kLocal, "local") X(kUpcast, "upcast") X(kUnroll, "unroll") \
  X(kGroup, "group")

enum class RangeKind : uint8_t {
#define UOPC_RK_ENUM(e, n) e,
  UOPC_FOR_EACH_RANGE_KIND(UOPC_RK_ENUM)
#undef UOPC_RK_ENUM
};
absl::string_view RangeKindName(RangeKind k);
bool ParseRangeKind(absl::string_view name, RangeKind* out);

/// RANGE: the loop's identity (idx) and what kind of loop it is.
struct RangeArg {
  int idx = 0;
  RangeKind kind = RangeKind::kLoop;
  bool operator==(const RangeArg&) const = default;
};

/// PERMUTE (the new order) and FLIP (the flipped axes).
struct Axes {
  std::vector<int> v;
  bool operator==(const Axes&) const = default;
};

/// REDUCE: the combining op (ADD, MUL or MAX) and the reduced axes.
struct ReduceArg {
  Ops op = Ops::ADD;
  std::vector<int> axes;
  bool operator==(const ReduceArg&) const = default;
};

/// COPY: the target device ("CPU:0", "CUDA:0"). STAGE: the device whose memory holds the
/// materialized result (empty: not placed yet).
struct DeviceArg {
  std::string name;
  bool operator==(const DeviceArg&) const = default;
};

#define UOPC_FOR_EACH_COLLECTIVE_KIND(X)                                                     \
  X(kIdentity, "identity")    /* the value as it is (a gradient's side of Megatron's f/g) */ \
  X(kAllReduce, "all_reduce") /* the reduction over the ranks, on every rank */              \
  X(kAllGather, "all_gather") /* the ranks' values one after another along axis 0 */         \
  X(kReduceScatter, "reduce_scatter") /* rank r's part (axis 0) of the reduction */

enum class CollectiveKind : uint8_t {
#define UOPC_CK_ENUM(e, n) e,
  UOPC_FOR_EACH_COLLECTIVE_KIND(UOPC_CK_ENUM)
#undef UOPC_CK_ENUM
};
absl::string_view CollectiveKindName(CollectiveKind k);
bool ParseCollectiveKind(absl::string_view name, CollectiveKind* out);

/// COLLECTIVE: what the `size` ranks of process group `group` (a number the distributed
/// layer gives the group in this process) do with the value (`kind`, combining with
/// `reduce`: ADD or MAX), and what they do with its gradient (`grad`). The gradient of a
/// COLLECTIVE is the COLLECTIVE with the two swapped: Megatron's f is {identity,
/// all_reduce}, its g {all_reduce, identity}; a plain all-reduce is {all_reduce,
/// all_reduce}, an all-gather's partner a reduce-scatter.
struct CollectiveArg {
  CollectiveKind kind = CollectiveKind::kAllReduce, grad = CollectiveKind::kAllReduce;
  Ops reduce = Ops::ADD;
  int group = 0, size = 1;
  bool operator==(const CollectiveArg&) const = default;
};

/// The closed set of arguments. A CONST's value is bool, int64 (all integer dtypes; a u64
/// above INT64_MAX is stored as its two's-complement bits) or double (all float dtypes).
class Arg {
 public:
  using Variant = std::variant<std::monostate, bool, int64_t, double, ParamArg, VarArg, RangeArg,
                               Axes, ReduceArg, DeviceArg, CollectiveArg>;
  Arg() = default;
  template <typename T>
  requires std::is_constructible_v<Variant, T&&> Arg(T&& v)
      : v_(std::forward<T>(v)) {}  // NOLINT: implicit by design

  const Variant& variant() const { return v_; }
  template <typename T>
  bool Is() const {
    return std::holds_alternative<T>(v_);
  }
  template <typename T>
  const T& Get() const {
    return std::get<T>(v_);
  }
  template <typename T>
  const T* TryGet() const {
    return std::get_if<T>(&v_);
  }
  bool Empty() const { return Is<std::monostate>(); }

  /// Exact equality (floats by bits).
  bool operator==(const Arg& o) const;
  size_t Hash() const;

 private:
  Variant v_;
};

}  // namespace uopc
