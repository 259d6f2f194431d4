// UPat: a pattern over UOps. A pattern matches a node by op set, dtype set, argument,
// constant value and sub-patterns for the sources; it can capture the node under a name,
// and a name captured twice must bind the same node (so `x + x` matches only a doubled
// node). Sources of a commutative op (ADD, MUL, ...) match in either order.
//
//   UPat::Var("x") + UPat::Cst("c")     // x + c, for any node x and any CONST c
//   UPat::Var("x") * UPat::Val(1)       // x * 1
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/uop.h"

namespace uopc {

class PatternMatcher;

/// The nodes a successful match captured, by name, and the rewrite's context.
class Match {
 public:
  /// The node captured as `name` (a CHECK failure if there is none: a bug in a rule).
  const UOp& operator[](absl::string_view name) const;
  /// Whether `name` was captured.
  bool Has(absl::string_view name) const;
  /// The context given to graph_rewrite, of the type it was given as (a rule asking for
  /// another type is a bug: a CHECK failure naming both).
  template <typename T>
  T* ctx() const {
    CheckContext(typeid(T));
    return static_cast<T*>(ctx_);
  }

 private:
  friend class UPat;
  friend class PatternMatcher;
  friend absl::StatusOr<UOp> GraphRewriteTyped(const UOp& root, const PatternMatcher& pm,
                                               void* ctx, const std::type_info* type);
  void CheckContext(const std::type_info& asked) const;
  absl::InlinedVector<std::pair<absl::string_view, UOp>, 4> captures_;
  void* ctx_ = nullptr;
  const std::type_info* ctx_type_ = nullptr;  // null: untyped (any type may be asked for)
};

class UPat {
 public:
  /// Any node, captured as `name` (if not empty).
  static UPat Var(absl::string_view name = {});
  /// Any CONST, captured as `name`.
  static UPat Cst(absl::string_view name = {});
  /// A CONST whose value equals `v` (for any dtype: 1 matches 1, 1.0 and true).
  static UPat Val(int64_t v);
  /// A node whose op is in `ops`, with `src` patterns for its sources (nullopt: any).
  static UPat Op(OpSet ops, std::optional<std::vector<UPat>> src = std::nullopt,
                 absl::string_view name = {});

  /// This pattern, also capturing the node as `name`.
  UPat Named(absl::string_view name) const;
  /// This pattern, restricted to nodes of these dtypes.
  UPat DTypes(std::initializer_list<DType> dtypes) const;
  /// This pattern, restricted to integer dtypes (and bool, if `with_bool`).
  UPat Ints(bool with_bool = false) const;
  /// This pattern, restricted to nodes whose argument equals `arg`.
  UPat WithArg(Arg arg) const;

  /// Matches `u`, adding captures to `m`; on failure `m` is as it was.
  bool MatchInto(const UOp& u, Match& m) const;
  /// The op set of the root (empty: any op), used to index rules.
  const OpSet& ops() const { return ops_; }

 private:
  bool MatchSrc(absl::Span<const UOp> src, Match& m, bool swap) const;

  OpSet ops_;
  uint16_t dtype_mask_ = 0;  // bit per DType; 0: any
  absl::string_view name_;
  std::optional<int64_t> value_;
  std::shared_ptr<const Arg> arg_;
  std::shared_ptr<const std::vector<UPat>> src_;
};

UPat operator+(const UPat& a, const UPat& b);
UPat operator*(const UPat& a, const UPat& b);

}  // namespace uopc
