// Shapes with symbolic dimensions: a Dim is a non-negative integer or an i32 expression
// over VARs (a UOp). Two dims are equal when simplify(a - b) folds to 0: a sound but
// incomplete check, so code that compares dims refuses what it cannot prove.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/uop.h"

namespace uopc {

class Dim {
 public:
  Dim(int64_t v = 0) : v_(v) {}  // NOLINT: implicit, so that {4, 8} is a Shape
  /// From a node: a CONST becomes its value, anything else a symbolic dim.
  static Dim FromUOp(const UOp& u);

  bool IsStatic() const { return !sym_; }
  /// The value of a static dim.
  int64_t value() const { return v_; }
  /// The dim as an i32 node (a CONST for a static dim).
  UOp AsUOp() const;
  /// Equal for every value of the VARs (proved by simplification).
  bool ProvablyEquals(const Dim& o) const;
  /// "4", or the expression's UIR root line for a symbolic dim ("n", "n*2").
  std::string ToString() const;

 private:
  int64_t v_ = 0;
  UOp sym_;
};

using Shape = std::vector<Dim>;

/// "(4, 8)"; "()" for a scalar.
std::string ShapeToString(const Shape& s);
/// The product of the dims (symbolic if any is).
Dim NumElements(const Shape& s);

}  // namespace uopc
