#include "core/bounds.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace uopc {
namespace {

using i128 = __int128;

struct B {
  i128 lo, hi;
};

B Full(DType t) {
  if (!HasBounds(t)) return {INT64_MIN, INT64_MAX};
  return {DTypeMin(t), DTypeMax(t)};
}

B Get(const UOp& u) {
  const UOp::BoundsCache& c = u.bounds_cache();
  return {c.lo.load(std::memory_order_relaxed), c.hi.load(std::memory_order_relaxed)};
}

// `b` if it lies within t's range, else t's full range (the op may overflow).
B Fit(B b, DType t) {
  B f = Full(t);
  if (b.lo < f.lo || b.hi > f.hi) return f;
  return b;
}

B Corners(i128 a, i128 b, i128 c, i128 d) {
  return {std::min({a, b, c, d}), std::max({a, b, c, d})};
}

i128 FloorDiv(i128 a, i128 b) {
  i128 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// `b` (the bounds of x) narrowed by what `cond` being true says of x: k < x, x < k, and both
// (a gate that picks x only where it lies in range: a block table's entry)
B Where(const UOp& cond, const UOp& x, B b, int depth = 0) {
  if (cond.is(Ops::AND) && IsBool(cond.dtype()) && depth < 8)
    return Where(cond.src(1), x, Where(cond.src(0), x, b, depth + 1), depth + 1);
  if (!cond.is(Ops::CMPLT)) return b;
  if (const std::optional<int64_t> k = cond.src(1).ConstIntValue(); k && cond.src(0) == x)
    b.hi = std::min<i128>(b.hi, i128{*k} - 1);
  if (const std::optional<int64_t> k = cond.src(0).ConstIntValue(); k && cond.src(1) == x)
    b.lo = std::max<i128>(b.lo, i128{*k} + 1);
  return b;
}

B Compute(const UOp& u) {
  DType t = u.dtype();
  if (!HasBounds(t)) return Full(t);
  auto s = [&](size_t i) { return Get(u.src(i)); };
  switch (u.op()) {
    case Ops::CONST: {
      int64_t v = *u.ConstIntValue();
      return {v, v};
    }
    case Ops::VAR: {
      const VarArg& v = u.arg().Get<VarArg>();
      return {std::max<i128>(v.lo, DTypeMin(t)), std::min<i128>(v.hi, DTypeMax(t))};
    }
    case Ops::RANGE:
    case Ops::IOTA: return {0, std::max<i128>(s(0).hi - 1, 0)};
    case Ops::AFTER: return s(0);
    case Ops::ADD: return Fit({s(0).lo + s(1).lo, s(0).hi + s(1).hi}, t);
    case Ops::MUL: {
      B a = s(0), b = s(1);
      return Fit(Corners(a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi), t);
    }
    case Ops::FLOORDIV: {
      B a = s(0), d = s(1);
      if (d.lo <= 0 && d.hi >= 0) return Full(t);
      return Fit(Corners(FloorDiv(a.lo, d.lo), FloorDiv(a.lo, d.hi), FloorDiv(a.hi, d.lo),
                         FloorDiv(a.hi, d.hi)),
                 t);
    }
    case Ops::MOD: {
      B a = s(0), d = s(1);
      if (d.lo > 0) {
        if (a.lo >= 0 && a.hi < d.lo) return a;
        // one divisor, and a within one multiple of it: a shifted down, exactly
        if (d.lo == d.hi && FloorDiv(a.lo, d.lo) == FloorDiv(a.hi, d.lo)) {
          const i128 q = FloorDiv(a.lo, d.lo) * d.lo;
          return {a.lo - q, a.hi - q};
        }
        return {0, a.lo >= 0 ? std::min(a.hi, d.hi - 1) : d.hi - 1};  // never above a itself
      }
      if (d.hi < 0) return {d.lo + 1, 0};
      return Full(t);
    }
    case Ops::MAX: return {std::max(s(0).lo, s(1).lo), std::max(s(0).hi, s(1).hi)};
    case Ops::CMPLT: {
      B a = s(0), b = s(1);
      if (a.hi < b.lo) return {1, 1};
      if (a.lo >= b.hi) return {0, 0};
      return {0, 1};
    }
    case Ops::CMPNE:
    case Ops::CMPEQ: {
      B a = s(0), b = s(1);
      bool ne = a.hi < b.lo || b.hi < a.lo, eq = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
      if (u.is(Ops::CMPEQ)) std::swap(ne, eq);
      return ne ? B{1, 1} : eq ? B{0, 0} : B{0, 1};
    }
    case Ops::WHERE: {
      B c = s(0), a = s(1), b = s(2);
      if (c.lo == 1) return a;
      if (c.hi == 0) return b;
      // x < y ? x : y is min(x, y), and x < y ? y : x is max(x, y)
      const UOp& cond = u.src(0);
      if (cond.is(Ops::CMPLT) && cond.src(0) == u.src(1) && cond.src(1) == u.src(2))
        return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
      if (cond.is(Ops::CMPLT) && cond.src(0) == u.src(2) && cond.src(1) == u.src(1))
        return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
      a = Where(cond, u.src(1), a);  // (what the gate says of the value it picks)
      if (a.lo > a.hi) return b;     // (it never picks it)
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case Ops::AND:
      if (IsBool(t)) return {std::min(s(0).lo, s(1).lo), std::min(s(0).hi, s(1).hi)};
      if (s(0).lo >= 0 && s(1).lo >= 0) return {0, std::min(s(0).hi, s(1).hi)};
      if (s(0).lo >= 0) return {0, s(0).hi};
      if (s(1).lo >= 0) return {0, s(1).hi};
      return Full(t);
    case Ops::OR:
    case Ops::XOR: {
      if (IsBool(t))
        return u.is(Ops::OR) ? B{std::max(s(0).lo, s(1).lo), std::max(s(0).hi, s(1).hi)} : B{0, 1};
      if (s(0).lo < 0 || s(1).lo < 0) return Full(t);
      i128 m = std::max(s(0).hi, s(1).hi), p = 1;
      while (p <= m) p <<= 1;
      return Fit({0, p - 1}, t);
    }
    case Ops::SHL: {
      B a = s(0), c = s(1);
      if (c.lo < 0 || c.hi >= DTypeSize(t) * 8 - 1) return Full(t);
      i128 lo = std::min(a.lo << c.lo, a.lo << c.hi), hi = std::max(a.hi << c.lo, a.hi << c.hi);
      return Fit({lo, hi}, t);
    }
    case Ops::SHR: {
      B a = s(0), c = s(1);
      if (c.lo < 0 || c.hi >= DTypeSize(t) * 8) return Full(t);
      return {std::min(a.lo >> c.lo, a.lo >> c.hi), std::max(a.hi >> c.lo, a.hi >> c.hi)};
    }
    case Ops::CAST: {
      const UOp& x = u.src(0);
      if (IsBool(t)) {
        if (!HasBounds(x.dtype())) return {0, 1};
        B a = s(0);
        return (a.lo > 0 || a.hi < 0) ? B{1, 1} : (a.lo == 0 && a.hi == 0) ? B{0, 0} : B{0, 1};
      }
      if (!HasBounds(x.dtype()) || IsFloat(x.dtype())) return Full(t);
      return Fit(s(0), t);
    }
    case Ops::SINK:
    case Ops::BUFFER:
    case Ops::ALLOC:
    case Ops::INDEX:
    case Ops::LOAD:
    case Ops::STORE:
    case Ops::END:
    case Ops::BARRIER:
    case Ops::RESHAPE:
    case Ops::EXPAND:
    case Ops::PERMUTE:
    case Ops::PAD:
    case Ops::SHRINK:
    case Ops::FLIP:
    case Ops::REDUCE:
    case Ops::STAGE:
    case Ops::COPY:
    case Ops::COLLECTIVE:
    case Ops::MATMUL:
    case Ops::ASSIGN:
    case Ops::EXP2:
    case Ops::LOG2:
    case Ops::SIN:
    case Ops::SQRT:
    case Ops::RECIP:
    case Ops::TRUNC:
    case Ops::BITCAST:
    case Ops::FDIV:
    case Ops::MULACC: return Full(t);
  }
  return Full(t);
}

void Ensure(const UOp& root) {
  if (root.bounds_cache().ready.load(std::memory_order_acquire)) return;
  // Post-order over the nodes whose bounds are not cached yet, without recursion.
  std::vector<std::pair<const UOp*, size_t>> stack{{&root, 0}};
  absl::flat_hash_set<const UOp::Node*> seen{root.get()};
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (i < u->src().size()) {
      const UOp* s = &u->src()[i++];
      if (!s->bounds_cache().ready.load(std::memory_order_acquire) && seen.insert(s->get()).second)
        stack.push_back({s, 0});
      continue;
    }
    B b = Compute(*u);
    UOp::BoundsCache& c = u->bounds_cache();
    c.lo.store(static_cast<int64_t>(b.lo), std::memory_order_relaxed);
    c.hi.store(static_cast<int64_t>(b.hi), std::memory_order_relaxed);
    c.ready.store(true, std::memory_order_release);
    stack.pop_back();
  }
}

}  // namespace

bool HasBounds(DType t) { return IsBool(t) || (IsInt(t) && t != DType::kU64); }

int64_t VMin(const UOp& u) {
  Ensure(u);
  return u.bounds_cache().lo.load(std::memory_order_relaxed);
}

int64_t VMax(const UOp& u) {
  Ensure(u);
  return u.bounds_cache().hi.load(std::memory_order_relaxed);
}

}  // namespace uopc
