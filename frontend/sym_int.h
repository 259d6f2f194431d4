// SymInt: an integer of a Tensor's shape (or a slice bound) that may be symbolic: an i32
// expression over bounded VARs (core/uop.h), each bound to a value. The graph holds the
// expression, so one plan serves every value; realize passes the values to the kernels.
//
//   SymInt T = SymInt::Variable("T", 1, 1024, 7);   // T in [1, 1024], now 7
//   Tensor x = Tensor::Zeros({2, T, 64});            // shape (2, T, 64), 2*7*64 elements now
//   x.Shrink({{0, 2}, {0, T - 1}, {0, 64}});         // shape (2, T-1, 64)
//
// Two SymInts are equal when their expressions are equal for every value of the VARs
// (proved by the simplifier), which is what shapes are compared by: T and 7 are different
// dims even while T is 7. value() is the value now; max() the largest the expression can
// be (what a buffer of this size is allocated for).
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/uop.h"

namespace uopc {

/// VARs and their values, each VAR once.
using VarBindings = std::vector<std::pair<UOp, int64_t>>;

/// The union of two sets of bindings (either may be null); throws uopc::Error naming the
/// VAR when one is bound to two values, or two VARs share a name.
std::shared_ptr<const VarBindings> MergeBindings(const std::shared_ptr<const VarBindings>& a,
                                                 const std::shared_ptr<const VarBindings>& b);

class SymInt {
 public:
  SymInt(int64_t v = 0) : value_(v) {}  // NOLINT: implicit, so that {2, T, 64} is a shape
  /// A VAR `name` declared to lie in [lo, hi], bound to `value` (which must lie there).
  static SymInt Variable(const std::string& name, int64_t lo, int64_t hi, int64_t value);
  /// The i32 expression `expr` over VARs of `bindings`, with its value under them.
  static SymInt FromUOp(const UOp& expr, const std::shared_ptr<const VarBindings>& bindings);

  int64_t value() const { return value_; }
  bool is_symbolic() const { return static_cast<bool>(expr_); }
  /// The expression (a CONST for a plain number).
  UOp uop() const { return expr_ ? expr_ : UOp::Int(value_); }
  /// The largest value the expression can take (the value, for a plain number).
  int64_t max() const;
  /// The VARs it reads and their values (null for a plain number).
  const std::shared_ptr<const VarBindings>& bindings() const { return bindings_; }
  /// "7", "T", "pos+T".
  std::string ToString() const;
  /// The same expression with each VAR named in `values` bound to that value (others keep
  /// theirs): what a plan run again with other VAR values computes.
  SymInt Rebound(const absl::flat_hash_map<std::string, int64_t>& values) const;

  SymInt& operator+=(const SymInt& o) { return *this = *this + o; }
  SymInt& operator-=(const SymInt& o) { return *this = *this - o; }
  SymInt& operator*=(const SymInt& o) { return *this = *this * o; }
  friend SymInt operator+(const SymInt& a, const SymInt& b);
  friend SymInt operator-(const SymInt& a, const SymInt& b);
  friend SymInt operator*(const SymInt& a, const SymInt& b);
  /// Floor division (the divisor a plain positive number or a symbolic expression).
  SymInt FloorDiv(const SymInt& d) const;
  /// Equal for every value of the VARs.
  friend bool operator==(const SymInt& a, const SymInt& b);

 private:
  static SymInt Combine(const SymInt& a, const SymInt& b, const UOp& expr, int64_t value);
  int64_t value_ = 0;
  UOp expr_;  // null: a plain number
  std::shared_ptr<const VarBindings> bindings_;
};

std::ostream& operator<<(std::ostream& os, const SymInt& s);

}  // namespace uopc
