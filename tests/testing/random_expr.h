// RandomExpr: random integer index expressions over bounded VARs and RANGEs, with random
// assignments of their leaves within bounds; for the simplifier's random tests and its
// bench. With `wide`, leaves also lie near the i32 limits, where arithmetic wraps.
#pragma once

#include <cstdint>
#include <random>

#include "absl/container/flat_hash_map.h"

#include "core/uop.h"

namespace uopc::testing {

class RandomExpr {
 public:
  /// `wide`: leaves also near the i32 limits (VARs over [0, 2^31-1] and [-2^31, -1], and
  /// large constants), where the arithmetic wraps.
  explicit RandomExpr(uint32_t seed, bool wide = false) : rng_(seed), wide_(wide) {}

  int64_t Int(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  UOp Leaf() {
    if (wide_ && Int(0, 2) == 0) {
      switch (Int(0, 2)) {
        case 0: return w0_;
        case 1: return w1_;
        default: return UOp::Int(Int(0, 1) ? Int(INT32_MIN, INT32_MAX) : Int(-70000, 70000));
      }
    }
    switch (Int(0, 6)) {
      case 0: return a_;
      case 1: return b_;
      case 2: return n_;
      case 3: return r0_;
      case 4: return r1_;
      case 5: return r2_;
      default: return UOp::Int(Int(-10, 10));
    }
  }

  UOp Expr(int depth) {
    if (depth == 0) return Leaf();
    UOp x = Expr(depth - 1);
    switch (Int(0, 11)) {
      case 0:
      case 1: return x + Expr(depth - 1);
      case 2: return x * Int(-4, 8);
      case 3: return x * Expr(depth - 2 < 0 ? 0 : depth - 2);
      case 4: return x.FloorDiv(Int(0, 3) ? Int(1, 9) : Int(-9, -1));
      case 5: return x.Mod(Int(0, 3) ? Int(1, 9) : Int(-9, -1));
      case 6: return x.FloorDiv(Int(0, 1) ? n_ : n_ + Int(0, 3));
      case 7: return x.Mod(Int(0, 1) ? n_ : n_ + Int(0, 3));
      case 8: return x.Max(Expr(depth - 1));
      case 9: return Bool(depth - 1).Where(x, Expr(depth - 1));
      case 10: return x - Expr(depth - 1);
      default: return Bool(depth - 1).Cast(DType::kI32) + x;
    }
  }

  UOp Bool(int depth) {
    UOp x = Expr(depth), y = Int(0, 2) ? Expr(depth) : UOp::Int(Int(-10, 10));
    switch (Int(0, 5)) {
      case 0:
      case 1: return x.Lt(y);
      case 2: return x.Ne(y);
      case 3: return x.Eq(y);
      case 4: return UOp::Derived(Ops::AND, {x.Lt(y), Bool(depth - 1 < 0 ? 0 : depth - 1)});
      default: return UOp::Derived(Ops::OR, {x.Lt(y), y.Lt(x)});
    }
  }

  // Values for the leaves within their bounds; false if a loop would be empty.
  bool Assign(absl::flat_hash_map<const UOp::Node*, int64_t>* env) {
    env->clear();
    for (const UOp& v : {a_, b_, n_, w0_, w1_}) {
      const VarArg& va = v.arg().Get<VarArg>();
      (*env)[v.get()] = Int(va.lo, va.hi);
    }
    for (const UOp& r : {r0_, r1_, r2_}) {
      int64_t end = r.src(0).is(Ops::VAR) ? env->at(r.src(0).get()) : *r.src(0).ConstIntValue();
      if (end <= 0) return false;
      (*env)[r.get()] = Int(0, end - 1);
    }
    return true;
  }

 private:
  std::mt19937 rng_;
  bool wide_;
  UOp w0_ = UOp::Var("w0", 0, INT32_MAX), w1_ = UOp::Var("w1", INT32_MIN, -1);
  UOp a_ = UOp::Var("a", -8, 8), b_ = UOp::Var("b", 0, 20), n_ = UOp::Var("n", 1, 8);
  UOp r0_ = UOp::Range(5, 0), r1_ = UOp::Range(n_, 1), r2_ = UOp::Range(b_, 2);
};

}  // namespace uopc::testing
