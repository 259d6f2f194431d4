#include "core/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "core/symbolic/simplify.h"

namespace uopc {

Dim Dim::FromUOp(const UOp& u) {
  if (auto v = u.ConstIntValue()) return Dim(*v);
  Dim d;
  d.sym_ = u;
  return d;
}

UOp Dim::AsUOp() const { return sym_ ? sym_ : UOp::Int(v_); }

bool Dim::ProvablyEquals(const Dim& o) const {
  if (IsStatic() && o.IsStatic()) return v_ == o.v_;
  UOp diff = Simplify(AsUOp() - o.AsUOp());
  return diff.ConstIntValue() == 0;
}

std::string Dim::ToString() const {
  if (IsStatic()) return absl::StrCat(v_);
  if (const auto* v = sym_.arg().TryGet<VarArg>()) return v->name;
  return absl::StrCat(OpName(sym_.op()), "(...)");
}

std::string ShapeToString(const Shape& s) {
  return absl::StrCat(
      "(",
      absl::StrJoin(s, ", ", [](std::string* out, const Dim& d) { out->append(d.ToString()); }),
      ")");
}

Dim NumElements(const Shape& s) {
  bool symbolic = false;
  int64_t n = 1;
  for (const Dim& d : s) {
    symbolic |= !d.IsStatic();
    if (d.IsStatic()) n *= d.value();
  }
  if (!symbolic) return Dim(n);
  UOp p = UOp::Int(1);
  for (const Dim& d : s) p = p * d.AsUOp();
  return Dim::FromUOp(Simplify(p));
}

}  // namespace uopc
