#include "core/upat.h"

#include <cmath>

#include "absl/strings/string_view.h"

#include "core/check.h"

namespace uopc {

const UOp& Match::operator[](absl::string_view name) const {
  for (const auto& [n, u] : captures_)
    if (n == name) return u;
  UOPC_CHECK(false) << "rule asked for capture '" << name << "' that its pattern does not bind";
  __builtin_unreachable();
}

void Match::CheckContext(const std::type_info& asked) const {
  UOPC_CHECK(!ctx_type_ || *ctx_type_ == asked)
      << "a rule asked for its context as " << asked.name() << ", but graph_rewrite was given "
      << ctx_type_->name();
}

bool Match::Has(absl::string_view name) const {
  for (const auto& [n, u] : captures_)
    if (n == name) return true;
  return false;
}

UPat UPat::Var(absl::string_view name) {
  UPat p;
  p.name_ = name;
  return p;
}

UPat UPat::Cst(absl::string_view name) { return Op({Ops::CONST}, std::nullopt, name); }

UPat UPat::Val(int64_t v) {
  UPat p = Cst();
  p.value_ = v;
  return p;
}

UPat UPat::Op(OpSet ops, std::optional<std::vector<UPat>> src, absl::string_view name) {
  UPat p;
  p.ops_ = ops;
  p.name_ = name;
  if (src) p.src_ = std::make_shared<const std::vector<UPat>>(std::move(*src));
  return p;
}

UPat UPat::Named(absl::string_view name) const {
  UPat p = *this;
  p.name_ = name;
  return p;
}

UPat UPat::DTypes(std::initializer_list<DType> dtypes) const {
  UPat p = *this;
  for (DType t : dtypes) p.dtype_mask_ |= uint16_t(1u << static_cast<int>(t));
  return p;
}

UPat UPat::Ints(bool with_bool) const {
  UPat p = DTypes({DType::kI8, DType::kU8, DType::kI16, DType::kU16, DType::kI32, DType::kU32,
                   DType::kI64, DType::kU64});
  return with_bool ? p.DTypes({DType::kBool}) : p;
}

UPat UPat::WithArg(Arg arg) const {
  UPat p = *this;
  p.arg_ = std::make_shared<const Arg>(std::move(arg));
  return p;
}

namespace {

bool ValueIs(const UOp& u, int64_t v) {
  if (const int64_t* i = u.arg().TryGet<int64_t>()) return *i == v;
  if (const double* d = u.arg().TryGet<double>()) return *d == static_cast<double>(v);
  if (const bool* b = u.arg().TryGet<bool>()) return (*b ? 1 : 0) == v;
  return false;
}

}  // namespace

bool UPat::MatchSrc(absl::Span<const UOp> src, Match& m, bool swap) const {
  const std::vector<UPat>& pats = *src_;
  if (pats.size() != src.size()) return false;
  for (size_t i = 0; i < pats.size(); ++i) {
    size_t j = swap ? pats.size() - 1 - i : i;
    if (!pats[i].MatchInto(src[j], m)) return false;
  }
  return true;
}

bool UPat::MatchInto(const UOp& u, Match& m) const {
  if (!ops_.Empty() && !ops_.Has(u.op())) return false;
  if (dtype_mask_ && !(dtype_mask_ >> static_cast<int>(u.dtype()) & 1)) return false;
  if (value_ && !ValueIs(u, *value_)) return false;
  if (arg_ && !(u.arg() == *arg_)) return false;
  size_t mark = m.captures_.size();
  bool bound = false;
  if (!name_.empty()) {
    if (m.Has(name_)) {
      if (!(m[name_] == u)) return false;  // a name bound twice binds one node
    } else {
      m.captures_.emplace_back(name_, u);
      bound = true;
    }
  }
  if (!src_) return true;
  if (MatchSrc(u.src(), m, false)) return true;
  m.captures_.resize(mark + (bound ? 1 : 0));
  if (IsCommutative(u.op()) && u.src().size() == 2 && MatchSrc(u.src(), m, true)) return true;
  m.captures_.resize(mark);
  return false;
}

UPat operator+(const UPat& a, const UPat& b) { return UPat::Op({Ops::ADD}, {{a, b}}); }
UPat operator*(const UPat& a, const UPat& b) { return UPat::Op({Ops::MUL}, {{a, b}}); }

}  // namespace uopc
