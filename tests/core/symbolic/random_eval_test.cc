// Every simplification must keep the value of an expression: random integer expressions
// over bounded VARs and RANGEs are evaluated for random assignments within their bounds,
// before and after Simplify. Values are computed exactly (in i64); an assignment under which
// the original would overflow i32 is skipped, as index arithmetic must not overflow.
#include <cstdint>
#include <random>

#include <gtest/gtest.h>

#include "absl/container/flat_hash_map.h"

#include "core/alu.h"
#include "core/bounds.h"
#include "core/symbolic/simplify.h"
#include "core/uir.h"

namespace uopc {
namespace {

class Gen {
 public:
  /// `wide`: leaves also near the i32 limits (VARs over [0, 2^31-1] and [-2^31, -1], and
  /// large constants), where the arithmetic wraps.
  explicit Gen(uint32_t seed, bool wide = false) : rng_(seed), wide_(wide) {}

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

// The exact value of `root`; nullopt if some i32 node leaves the i32 range (or divides by 0).
// With `wrap`: the value as the IR computes it, i32 arithmetic wrapping (nullopt only for a
// division by 0).
std::optional<int64_t> Eval(const UOp& root,
                            const absl::flat_hash_map<const UOp::Node*, int64_t>& env,
                            bool wrap = false) {
  absl::flat_hash_map<const UOp::Node*, Arg> val;
  for (const UOp& u : root.Toposort()) {
    Arg v;
    if (auto it = env.find(u.get()); it != env.end()) {
      v = Arg(it->second);
    } else if (u.is(Ops::CONST)) {
      v = u.arg();
    } else {
      std::vector<Arg> in;
      for (const UOp& s : u.src()) in.push_back(val.at(s.get()));
      DType src_t = u.src(u.is(Ops::WHERE) ? 1 : 0).dtype();
      DType exact = IsBool(src_t) ? DType::kBool : wrap ? src_t : DType::kI64;
      DType out = u.dtype() == DType::kBool ? DType::kBool : wrap ? u.dtype() : DType::kI64;
      std::optional<Arg> r = EvalAlu(u.op(), exact, out, in);
      if (!r) return std::nullopt;
      v = *r;
    }
    if (const int64_t* i = v.TryGet<int64_t>();
        !wrap && i && (*i < DTypeMin(u.dtype()) || *i > DTypeMax(u.dtype())))
      return std::nullopt;
    val.emplace(u.get(), v);
  }
  const Arg& r = val.at(root.get());
  if (const bool* b = r.TryGet<bool>()) return *b;
  return r.Get<int64_t>();
}

TEST(RandomEval, SimplifyKeepsTheValue) {
  Gen g(12345);
  absl::flat_hash_map<const UOp::Node*, int64_t> env;
  int checked = 0, changed = 0;
  for (int e = 0; e < 4000; ++e) {
    UOp expr =
        g.Int(0, 3) ? g.Expr(static_cast<int>(g.Int(1, 5))) : g.Bool(static_cast<int>(g.Int(1, 4)));
    UOp simple = Simplify(expr);
    changed += !(simple == expr);
    for (int k = 0; k < 25; ++k) {
      if (!g.Assign(&env)) continue;
      std::optional<int64_t> want = Eval(expr, env);
      if (!want) continue;
      std::optional<int64_t> got = Eval(simple, env);
      ASSERT_EQ(got, want) << "before:\n" << ToUir(expr) << "after:\n" << ToUir(simple);
      // bounds must hold the value too
      ASSERT_GE(*want, VMin(expr)) << ToUir(expr);
      ASSERT_LE(*want, VMax(expr)) << ToUir(expr);
      ++checked;
    }
  }
  EXPECT_GT(checked, 50000);
  EXPECT_GT(changed, 2000);  // the rules did fire
}

// The IR's integers wrap (core/alu.h), and so must every rule: with VARs and constants
// near the i32 limits, where sums and products wrap, the simplified expression computes
// what the original computes, bit for bit, and its value lies within the printed bounds.
TEST(RandomEval, SimplifyKeepsTheValueWhenI32Wraps) {
  Gen g(777, /*wide=*/true);
  absl::flat_hash_map<const UOp::Node*, int64_t> env;
  int checked = 0, wrapped = 0;
  for (int e = 0; e < 4000; ++e) {
    UOp expr =
        g.Int(0, 3) ? g.Expr(static_cast<int>(g.Int(1, 4))) : g.Bool(static_cast<int>(g.Int(1, 3)));
    UOp simple = Simplify(expr);
    for (int k = 0; k < 25; ++k) {
      if (!g.Assign(&env)) continue;
      std::optional<int64_t> want = Eval(expr, env, /*wrap=*/true);
      if (!want) continue;  // a division by 0
      wrapped += !Eval(expr, env).has_value();
      std::optional<int64_t> got = Eval(simple, env, /*wrap=*/true);
      ASSERT_EQ(got, want) << "before:\n" << ToUir(expr) << "after:\n" << ToUir(simple);
      ASSERT_GE(*want, VMin(expr)) << ToUir(expr);
      ASSERT_LE(*want, VMax(expr)) << ToUir(expr);
      ASSERT_GE(*got, VMin(simple)) << ToUir(simple);
      ASSERT_LE(*got, VMax(simple)) << ToUir(simple);
      ++checked;
    }
  }
  EXPECT_GT(checked, 50000);
  EXPECT_GT(wrapped, 5000);  // many assignments did wrap
}

}  // namespace
}  // namespace uopc
