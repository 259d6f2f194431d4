#include "frontend/sym_int.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

#include "core/check.h"
#include "core/bounds.h"
#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "frontend/error.h"

namespace uopc {

std::shared_ptr<const VarBindings> MergeBindings(const std::shared_ptr<const VarBindings>& a,
                                                 const std::shared_ptr<const VarBindings>& b) {
  if (!b || a == b) return a;
  if (!a) return b;
  VarBindings out = *a;
  bool grew = false;
  for (const auto& [var, value] : *b) {
    const VarArg& v = var.arg().Get<VarArg>();
    auto same = std::find_if(out.begin(), out.end(), [&](const std::pair<UOp, int64_t>& e) {
      return e.first.arg().Get<VarArg>().name == v.name;
    });
    if (same == out.end()) {
      out.emplace_back(var, value);
      grew = true;
      continue;
    }
    const VarArg& w = same->first.arg().Get<VarArg>();
    if (!(same->first == var))
      ThrowInvalid(absl::StrCat("two VARs named ", v.name, " in one graph: in [", w.lo, ", ",
                                w.hi, "] and in [", v.lo, ", ", v.hi,
                                "]; expected one VAR per name"));
    if (same->second != value)
      ThrowInvalid(absl::StrCat("VAR ", v.name, " bound to ", same->second, " and to ", value,
                                " in one graph; expected one value per VAR"));
  }
  return grew ? std::make_shared<const VarBindings>(std::move(out)) : a;
}

SymInt SymInt::Variable(const std::string& name, int64_t lo, int64_t hi, int64_t value) {
  if (name.empty() || lo > hi || lo < 0 || hi > INT32_MAX)
    ThrowInvalid(absl::StrCat("variable: \"", name, "\" in [", lo, ", ", hi,
                              "]; expected a name and 0 <= lo <= hi <= 2^31-1"));
  if (value < lo || value > hi)
    ThrowInvalid(absl::StrCat("variable: ", name, " bound to ", value, "; expected ", lo,
                              " <= ", name, " <= ", hi));
  SymInt s(value);
  s.expr_ = UOp::Var(name, lo, hi);
  s.bindings_ = std::make_shared<const VarBindings>(VarBindings{{s.expr_, value}});
  return s;
}

SymInt SymInt::FromUOp(const UOp& expr, const std::shared_ptr<const VarBindings>& bindings) {
  if (auto v = expr.ConstIntValue()) return SymInt(*v);
  UOp bound = RewriteNodes(expr, [&](const UOp& orig, const UOp& rebuilt) {
    if (!orig.is(Ops::VAR)) return rebuilt;
    if (bindings)
      for (const auto& [var, value] : *bindings)
        if (var == orig) return UOp::Int(value);
    ThrowInvalid(absl::StrCat("no value bound for VAR ", orig.arg().Get<VarArg>().name));
  });
  std::optional<int64_t> v = Simplify(bound).ConstIntValue();
  if (!v) ThrowInvalid("a symbolic dim that does not evaluate to a number");
  SymInt s(*v);
  s.expr_ = expr;
  s.bindings_ = bindings;
  return s;
}

int64_t SymInt::max() const { return expr_ ? VMax(expr_) : value_; }

namespace {

bool NeedsParens(const UOp& u) { return u.is(Ops::ADD); }

std::string Infix(const UOp& u) {
  if (auto v = u.ConstIntValue()) return absl::StrCat(*v);
  if (const auto* v = u.arg().TryGet<VarArg>()) return v->name;
  auto operand = [](const UOp& x) {
    return NeedsParens(x) ? absl::StrCat("(", Infix(x), ")") : Infix(x);
  };
  switch (u.op()) {
    case Ops::ADD: {
      const UOp& b = u.src(1);
      if (auto c = b.ConstIntValue(); c && *c < 0) return absl::StrCat(Infix(u.src(0)), *c);
      if (b.is(Ops::MUL) && b.src(1).ConstIntValue() == -1)
        return absl::StrCat(Infix(u.src(0)), "-", operand(b.src(0)));
      return absl::StrCat(Infix(u.src(0)), "+", Infix(b));
    }
    case Ops::MUL: return absl::StrCat(operand(u.src(0)), "*", operand(u.src(1)));
    case Ops::FLOORDIV: return absl::StrCat(operand(u.src(0)), "//", operand(u.src(1)));
    case Ops::MOD: return absl::StrCat(operand(u.src(0)), "%", operand(u.src(1)));
    case Ops::MAX: return absl::StrCat("max(", Infix(u.src(0)), ", ", Infix(u.src(1)), ")");
    UOPC_FOR_EACH_NON_ALU_OP(UOPC_OP_CASE) case Ops::EXP2: case Ops::LOG2: case Ops::SIN:
    case Ops::SQRT: case Ops::RECIP: case Ops::TRUNC: case Ops::CAST: case Ops::BITCAST:
    case Ops::FDIV: case Ops::CMPLT: case Ops::CMPNE: case Ops::CMPEQ: case Ops::AND:
    case Ops::OR: case Ops::XOR: case Ops::SHL: case Ops::SHR: case Ops::WHERE:
    case Ops::MULACC:
      return absl::StrCat(OpName(u.op()), "(...)");
  }
  UOPC_UNREACHABLE("an op");
}

}  // namespace

std::string SymInt::ToString() const { return expr_ ? Infix(expr_) : absl::StrCat(value_); }

SymInt SymInt::Rebound(const absl::flat_hash_map<std::string, int64_t>& values) const {
  if (!expr_) return *this;
  VarBindings b = *bindings_;
  for (auto& [var, value] : b)
    if (auto it = values.find(var.arg().Get<VarArg>().name); it != values.end()) value = it->second;
  return FromUOp(expr_, std::make_shared<const VarBindings>(std::move(b)));
}

namespace {

// Simplify, remembered: shapes combine the same few expressions over and over. (Never
// destroyed: nodes must not outlive the interner at exit.)
UOp SimplifyDim(const UOp& expr) {
  static absl::Mutex mu;
  static auto* memo = new absl::flat_hash_map<UOp, UOp>();
  {
    absl::MutexLock lock(&mu);
    if (auto it = memo->find(expr); it != memo->end()) return it->second;
  }
  UOp e = Simplify(expr);
  absl::MutexLock lock(&mu);
  if (memo->size() > 4096) memo->clear();
  memo->emplace(expr, e);
  return e;
}

}  // namespace

SymInt SymInt::Combine(const SymInt& a, const SymInt& b, const UOp& expr, int64_t value) {
  SymInt s(value);
  UOp e = SimplifyDim(expr);
  if (e.ConstIntValue()) return s;  // the VARs cancelled out
  s.expr_ = e;
  s.bindings_ = MergeBindings(a.bindings_, b.bindings_);
  return s;
}

SymInt operator+(const SymInt& a, const SymInt& b) {
  if (!a.expr_ && !b.expr_) return SymInt(a.value_ + b.value_);
  if (!b.expr_ && b.value_ == 0) return a;
  if (!a.expr_ && a.value_ == 0) return b;
  return SymInt::Combine(a, b, a.uop() + b.uop(), a.value_ + b.value_);
}

SymInt operator-(const SymInt& a, const SymInt& b) {
  if (!a.expr_ && !b.expr_) return SymInt(a.value_ - b.value_);
  if (!b.expr_ && b.value_ == 0) return a;
  if (a.expr_ == b.expr_) return SymInt(0);
  return SymInt::Combine(a, b, a.uop() - b.uop(), a.value_ - b.value_);
}

SymInt operator*(const SymInt& a, const SymInt& b) {
  if (!a.expr_ && !b.expr_) return SymInt(a.value_ * b.value_);
  if (!b.expr_ && b.value_ == 1) return a;
  if (!a.expr_ && a.value_ == 1) return b;
  return SymInt::Combine(a, b, a.uop() * b.uop(), a.value_ * b.value_);
}

SymInt SymInt::FloorDiv(const SymInt& d) const {
  if (d.value_ <= 0) ThrowInvalid(absl::StrCat("floor division of ", ToString(), " by ", d.ToString()));
  int64_t q = value_ >= 0 ? value_ / d.value_ : -((-value_ + d.value_ - 1) / d.value_);
  if (!expr_ && !d.expr_) return SymInt(q);
  return Combine(*this, d, uop().FloorDiv(d.uop()), q);
}

bool operator==(const SymInt& a, const SymInt& b) {
  if (!a.expr_ && !b.expr_) return a.value_ == b.value_;
  if (a.value_ != b.value_ || !a.expr_ != !b.expr_) return false;  // (a number is no VAR)
  if (a.expr_ == b.expr_) return true;  // one node: one expression
  return SimplifyDim(a.uop() - b.uop()).ConstIntValue() == 0;
}

std::ostream& operator<<(std::ostream& os, const SymInt& s) { return os << s.ToString(); }

}  // namespace uopc
