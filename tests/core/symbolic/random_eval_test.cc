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
#include "tests/testing/random_expr.h"

namespace uopc {
namespace {

using Gen = testing::RandomExpr;

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

struct Counts {
  int checked = 0, changed = 0, wrapped = 0;
};

// 8,000 random expressions, each simplified and evaluated before and after at 25 random
// assignments: the same value (exact, or wrapping i32 with `wrap`), within both bounds.
Counts CheckRandomExpressions(Gen& g, int max_depth, bool wrap) {
  absl::flat_hash_map<const UOp::Node*, int64_t> env;
  Counts n;
  for (int e = 0; e < 8000; ++e) {
    UOp expr = g.Int(0, 3) ? g.Expr(static_cast<int>(g.Int(1, max_depth)))
                           : g.Bool(static_cast<int>(g.Int(1, max_depth - 1)));
    UOp simple = Simplify(expr);
    n.changed += !(simple == expr);
    for (int k = 0; k < 25; ++k) {
      if (!g.Assign(&env)) continue;
      std::optional<int64_t> want = Eval(expr, env, wrap);
      if (!want) continue;  // an overflow (exact), or a division by 0
      n.wrapped += wrap && !Eval(expr, env).has_value();
      std::optional<int64_t> got = Eval(simple, env, wrap);
      EXPECT_EQ(got, want) << "before:\n" << ToUir(expr) << "after:\n" << ToUir(simple);
      if (got != want) return n;
      EXPECT_GE(*want, VMin(expr)) << ToUir(expr);
      EXPECT_LE(*want, VMax(expr)) << ToUir(expr);
      EXPECT_GE(*got, VMin(simple)) << ToUir(simple);
      EXPECT_LE(*got, VMax(simple)) << ToUir(simple);
      ++n.checked;
    }
  }
  return n;
}

TEST(RandomEval, SimplifyKeepsTheValue) {
  Gen g(12345);
  Counts n = CheckRandomExpressions(g, 5, /*wrap=*/false);
  EXPECT_GT(n.checked, 100000);
  EXPECT_GT(n.changed, 2000);  // the rules did fire
}

// The IR's integers wrap (core/alu.h), and so must every rule: with VARs and constants
// near the i32 limits, where sums and products wrap, the simplified expression computes
// what the original computes, bit for bit, and its value lies within the printed bounds.
TEST(RandomEval, SimplifyKeepsTheValueWhenI32Wraps) {
  Gen g(777, /*wide=*/true);
  Counts n = CheckRandomExpressions(g, 4, /*wrap=*/true);
  EXPECT_GT(n.checked, 100000);
  EXPECT_GT(n.wrapped, 5000);  // many assignments did wrap
}

}  // namespace
}  // namespace uopc
