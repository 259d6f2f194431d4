#include "core/symbolic/divmod.h"

#include <algorithm>
#include <numeric>

#include "core/bounds.h"
#include "core/symbolic/terms.h"

namespace uopc {
namespace {

using i128 = __int128;

i128 FloorDiv(i128 a, i128 b) {
  i128 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// 0 <= x < d, from bounds or from x being a loop over [0, d).
bool InRangeOf(const UOp& x, const UOp& d) {
  if (VMin(x) < 0) return false;
  if (VMax(x) < VMin(d)) return true;
  return x.is(Ops::RANGE) && x.src(0) == d;
}

// 0 is outside b's bounds
bool NonZero(const UOp& b) { return HasBounds(b.dtype()) && (VMin(b) > 0 || VMax(b) < 0); }

// b*c within the dtype for all values in bounds (no wrap-around)
bool ProductFits(const UOp& b, const UOp& c) {
  if (!HasBounds(b.dtype())) return false;
  const i128 lo = DTypeMin(b.dtype()), hi = DTypeMax(b.dtype());
  for (i128 p : {i128{VMin(b)} * VMin(c), i128{VMin(b)} * VMax(c), i128{VMax(b)} * VMin(c),
                 i128{VMax(b)} * VMax(c)})
    if (p < lo || p > hi) return false;
  return true;
}

// A remainder by a power of two is the same wrapped or not (2^32 and 2^64 are multiples of it).
bool RemainderIgnoresWrap(int64_t c, DType t) { return (c & (c - 1)) == 0 && DTypeSize(t) >= 4; }

// Whether the exact value of `sum` always fits `t`: where it wraps, x // c is not q + r // c
// (x + x wraps to -2 at the top, and (x + x) // 2 is then not x). A loop whose end is
// unbounded (loaded) is assumed not to make its index sum wrap: an index past the i32 range
// addresses nothing (so the seed's 15.2 still splits); a loop with a bounded end counts
// with its bounds.
bool SumFits(const Sum& sum, DType t) {
  i128 lo = sum.constant, hi = sum.constant;
  for (const Term& term : sum.terms) {
    if (term.base.is(Ops::RANGE) && VMax(term.base.src(0)) == DTypeMax(term.base.dtype())) continue;
    if (!HasBounds(term.base.dtype())) return false;
    const i128 a = i128{term.coeff} * VMin(term.base), b = i128{term.coeff} * VMax(term.base);
    lo += std::min(a, b), hi += std::max(a, b);
  }
  return lo >= DTypeMin(t) && hi <= DTypeMax(t);
}

// x = q*c + r, with the terms of x whose coefficient c divides (and the constant's
// multiple of c) in q. False when q is empty.
bool SplitByDivisor(const UOp& x, int64_t c, UOp* q, UOp* r, bool mod = false) {
  if (!HasBounds(x.dtype())) return false;  // u64: coefficients do not fit int64
  Sum sum = FlattenSum(x);
  if (!(mod && RemainderIgnoresWrap(c, x.dtype())) && !SumFits(sum, x.dtype())) return false;
  std::vector<Term> qt, rt;
  for (const Term& t : sum.terms) {
    if (t.coeff % c == 0)
      qt.push_back({t.base, t.coeff / c});
    else
      rt.push_back(t);
  }
  int64_t qc = static_cast<int64_t>(FloorDiv(sum.constant, c));
  int64_t rc = sum.constant - qc * c;
  if (qt.empty() && qc == 0) return false;
  *q = BuildSum(qt, qc, x.dtype());
  *r = BuildSum(rt, rc, x.dtype());
  return true;
}

// x = q*d + r for a divisor d > 0 that is not a constant: the terms d*a (and d itself) go to
// q. False when none does, or x may wrap.
bool SplitByVarDivisor(const UOp& x, const UOp& d, UOp* q, UOp* r) {
  if (!HasBounds(x.dtype()) || VMin(d) <= 0) return false;
  Sum sum = FlattenSum(x);
  if (!SumFits(sum, x.dtype())) return false;
  std::vector<Term> qt, rt;
  int64_t qc = 0;
  for (const Term& t : sum.terms) {
    if (t.base == d)
      qc += t.coeff;  // (bounded: |coeff| <= |coeff * d|, which fits)
    else if (t.base.is(Ops::MUL) && (t.base.src(0) == d || t.base.src(1) == d) &&
             ProductFits(t.base.src(0), t.base.src(1)))  // (d*a is then exactly d times a)
      qt.push_back({t.base.src(0) == d ? t.base.src(1) : t.base.src(0), t.coeff});
    else
      rt.push_back(t);
  }
  if (qt.empty() && qc == 0) return false;
  *q = BuildSum(qt, qc, x.dtype());
  *r = BuildSum(rt, sum.constant, x.dtype());
  return true;
}

// (q*d + r) // d -> q + r // d
UOp SplitVarDiv(const Match& m) {
  UOp q, r;
  if (m["d"].is(Ops::CONST) || !SplitByVarDivisor(m["x"], m["d"], &q, &r)) return UOp();
  return q + r.FloorDiv(m["d"]);
}

// (q*d + r) % d -> r % d
UOp SplitVarMod(const Match& m) {
  UOp q, r;
  if (m["d"].is(Ops::CONST) || !SplitByVarDivisor(m["x"], m["d"], &q, &r)) return UOp();
  return r.Mod(m["d"]);
}

// (q*c + r) // c -> q + r // c
UOp SplitDiv(const Match& m) {
  const UOp &x = m["x"], &c = m["c"];
  int64_t cv = *c.ConstIntValue();
  UOp q, r;
  if (cv <= 0 || !SplitByDivisor(x, cv, &q, &r)) return UOp();
  return q + r.FloorDiv(c);
}

// x = g*q + r with 0 <= r < g, for a common factor g of c (1 < g < c) and of the
// coefficients of q's terms; the rest of x in r. False when there is no such g.
bool SplitByFactor(const UOp& x, int64_t c, int64_t* g, UOp* q, UOp* r) {
  if (c <= 2 || !HasBounds(x.dtype())) return false;
  const Sum sum = FlattenSum(x);
  if (!SumFits(sum, x.dtype())) return false;
  for (const Term& candidate : sum.terms) {
    const int64_t f = std::gcd(c, candidate.coeff < 0 ? -candidate.coeff : candidate.coeff);
    if (f <= 1 || f >= c) continue;
    std::vector<Term> qt, rt;
    for (const Term& t : sum.terms) (t.coeff % f == 0 ? qt : rt).push_back(t);
    for (Term& t : qt) t.coeff /= f;
    const int64_t qc = static_cast<int64_t>(FloorDiv(sum.constant, f));
    UOp rest = BuildSum(rt, sum.constant - qc * f, x.dtype());
    if (VMin(rest) < 0 || VMax(rest) >= f) continue;
    *g = f, *q = BuildSum(qt, qc, x.dtype()), *r = rest;
    return true;
  }
  return false;
}

// (g*q + r) // c -> q // (c/g) for 0 <= r < g, g dividing c: (8a + b) // 32 -> a // 4, b < 8
UOp FactorDiv(const Match& m) {
  int64_t g = 0;
  UOp q, r;
  const int64_t c = *m["c"].ConstIntValue();
  if (!SplitByFactor(m["x"], c, &g, &q, &r)) return UOp();
  return q.FloorDiv(UOp::ConstInt(q.dtype(), c / g));
}

// (g*q + r) % c -> (q % (c/g))*g + r for 0 <= r < g, g dividing c: (8a + b) % 32 -> (a % 4)*8 + b
UOp FactorMod(const Match& m) {
  int64_t g = 0;
  UOp q, r;
  const int64_t c = *m["c"].ConstIntValue();
  if (!SplitByFactor(m["x"], c, &g, &q, &r)) return UOp();
  return q.Mod(UOp::ConstInt(q.dtype(), c / g)) * g + r;
}

// (q*c + r) % c -> r % c
UOp SplitMod(const Match& m) {
  const UOp &x = m["x"], &c = m["c"];
  int64_t cv = *c.ConstIntValue();
  UOp q, r;
  if (cv <= 0 || !SplitByDivisor(x, cv, &q, &r, /*mod=*/true)) return UOp();
  return r.Mod(c);
}

// (k*a + ... + k0) % c -> (k'*a + ... + k0') % c with every coefficient k' = k (mod c) in
// (-c/2, c/2] and the constant in [0, c): the same remainder, over a narrower sum (which
// other rules may then see inside [0, c)): (17 + 13a) % 18 -> (17 - 5a) % 18
UOp ModCongruence(const Match& m) {
  const UOp &x = m["x"], &c = m["c"];
  const int64_t cv = *c.ConstIntValue();
  if (cv <= 1 || !HasBounds(x.dtype())) return UOp();
  Sum sum = FlattenSum(x);
  auto reduce = [cv](int64_t k, bool symmetric) {
    int64_t r = k % cv;
    if (r < 0) r += cv;
    return symmetric && r > cv / 2 ? r - cv : r;
  };
  bool changed = false;
  Sum out = sum;
  for (Term& t : out.terms) {
    const int64_t k = reduce(t.coeff, true);
    changed |= k != t.coeff;
    t.coeff = k;
  }
  out.constant = reduce(sum.constant, false);
  changed |= out.constant != sum.constant;
  if (!changed || (!RemainderIgnoresWrap(cv, x.dtype()) &&
                   (!SumFits(sum, x.dtype()) || !SumFits(out, x.dtype()))))
    return UOp();
  return BuildSum(out.terms, out.constant, x.dtype()).Mod(c);
}

// (x // c0) // c1 -> x // (c0 * c1)
UOp NestedDiv(const Match& m) {
  int64_t c0 = *m["c0"].ConstIntValue(), c1 = *m["c1"].ConstIntValue();
  const UOp& x = m["x"];
  i128 p = i128{c0} * c1;
  if (c0 <= 0 || c1 <= 0 || p > DTypeMax(x.dtype())) return UOp();
  return x.FloorDiv(UOp::ConstInt(x.dtype(), static_cast<int64_t>(p)));
}

// (x * c0) // c1 -> x // (c1 / c0) when c0 divides c1 (c0, c1 > 0, x * c0 exact)
UOp DivOfMul(const Match& m) {
  const UOp &x = m["x"], &c0 = m["c0"];
  int64_t a = *c0.ConstIntValue(), b = *m["c1"].ConstIntValue();
  if (a <= 0 || b <= 0 || b % a != 0 || !ProductFits(x, c0)) return UOp();
  return x.FloorDiv(UOp::ConstInt(x.dtype(), b / a));
}

// (x % c0) % c1 -> x % c1 when c1 divides c0 (c0, c1 > 0): floor modulo keeps x's class mod c1
UOp ModOfMod(const Match& m) {
  int64_t a = *m["c0"].ConstIntValue(), b = *m["c1"].ConstIntValue();
  if (a <= 0 || b <= 0 || a % b != 0) return UOp();
  return m["x"].Mod(m["c1"]);
}

UPat Div(UPat a, UPat b) { return UPat::Op({Ops::FLOORDIV}, {{std::move(a), std::move(b)}}); }
UPat Mod(UPat a, UPat b) { return UPat::Op({Ops::MOD}, {{std::move(a), std::move(b)}}); }

}  // namespace

const PatternMatcher& DivModRules() {
  static const PatternMatcher* pm = new PatternMatcher("divmod", {
      // x // 1 -> x
      {Div(UPat::Var("x"), UPat::Val(1)).Ints(), [](const Match& m) { return m["x"]; }},
      // x % 1 -> 0
      {Mod(UPat::Var("x"), UPat::Val(1)).Ints(),
       [](const Match& m) { return UOp::ConstInt(m["x"].dtype(), 0); }},
      // x // d -> 0 when 0 <= x < d
      {Div(UPat::Var("x"), UPat::Var("d")).Ints(),
       [](const Match& m) {
         return InRangeOf(m["x"], m["d"]) ? UOp::ConstInt(m["x"].dtype(), 0) : UOp();
       }},
      // x % d -> x when 0 <= x < d
      {Mod(UPat::Var("x"), UPat::Var("d")).Ints(),
       [](const Match& m) { return InRangeOf(m["x"], m["d"]) ? m["x"] : UOp(); }},
      // (q*c + r) // c -> q + r // c
      {Div(UPat::Var("x"), UPat::Cst("c")).Ints(), SplitDiv},
      // (q*c + r) % c -> r % c
      {Mod(UPat::Var("x"), UPat::Cst("c")).Ints(), SplitMod},
      // (g*q + r) // c -> q // (c/g), (g*q + r) % c -> (q % (c/g))*g + r, 0 <= r < g | c
      {Div(UPat::Var("x"), UPat::Cst("c")).Ints(), FactorDiv},
      {Mod(UPat::Var("x"), UPat::Cst("c")).Ints(), FactorMod},
      // coefficients and constant of a remainder's sum reduced modulo c
      {Mod(UPat::Var("x"), UPat::Cst("c")).Ints(), ModCongruence},
      // b // b -> 1, b % b -> 0, for b never 0
      {Div(UPat::Var("b"), UPat::Var("b")).Ints(),
       [](const Match& m) { return NonZero(m["b"]) ? UOp::ConstInt(m["b"].dtype(), 1) : UOp(); }},
      {Mod(UPat::Var("b"), UPat::Var("b")).Ints(),
       [](const Match& m) { return NonZero(m["b"]) ? UOp::ConstInt(m["b"].dtype(), 0) : UOp(); }},
      // (b * c) % b -> 0, for b never 0 and b * c exact (b either operand)
      {Mod(UPat::Op({Ops::MUL}, std::nullopt, "p"), UPat::Var("b")).Ints(),
       [](const Match& m) {
         const UOp &p = m["p"], &b = m["b"];
         const UOp& c = p.src(0) == b ? p.src(1) : p.src(1) == b ? p.src(0) : UOp();
         return c && NonZero(b) && ProductFits(b, c) ? UOp::ConstInt(b.dtype(), 0) : UOp();
       }},
      // (x * c0) // c1 -> x // (c1 / c0)
      {Div(UPat::Var("x") * UPat::Cst("c0"), UPat::Cst("c1")).Ints(), DivOfMul},
      // (x % c0) % c1 -> x % c1
      {Mod(Mod(UPat::Var("x"), UPat::Cst("c0")), UPat::Cst("c1")).Ints(), ModOfMod},
      // (q*d + r) // d -> q + r // d, (q*d + r) % d -> r % d, for a divisor d > 0
      {Div(UPat::Var("x"), UPat::Var("d")).Ints(), SplitVarDiv},
      {Mod(UPat::Var("x"), UPat::Var("d")).Ints(), SplitVarMod},
      // (x // c0) // c1 -> x // (c0*c1)
      {Div(Div(UPat::Var("x"), UPat::Cst("c0")), UPat::Cst("c1")).Ints(), NestedDiv},
  });
  return *pm;
}

}  // namespace uopc
