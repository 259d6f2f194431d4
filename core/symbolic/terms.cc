#include "core/symbolic/terms.h"

#include "core/alu.h"

namespace uopc {

int64_t WrapTo(DType dtype, __int128 v) {
  return CastValue(Arg(static_cast<int64_t>(static_cast<unsigned __int128>(v))), DType::kI64, dtype)
      .Get<int64_t>();
}

Sum FlattenSum(const UOp& u) {
  Sum sum;
  std::vector<UOp> stack{u};
  // Depth-first, left operand first, so terms keep their order of appearance.
  while (!stack.empty()) {
    UOp x = std::move(stack.back());
    stack.pop_back();
    if (x.is(Ops::ADD)) {
      stack.push_back(x.src(1));
      stack.push_back(x.src(0));
    } else if (auto c = x.ConstIntValue()) {
      sum.constant = WrapTo(u.dtype(), __int128{sum.constant} + *c);
      ++sum.num_constants;
    } else if (x.is(Ops::MUL) && x.src(1).is(Ops::CONST)) {
      sum.terms.push_back({x.src(0), *x.src(1).ConstIntValue()});
    } else {
      sum.terms.push_back({x, 1});
    }
  }
  return sum;
}

UOp BuildSum(const std::vector<Term>& terms, int64_t constant, DType dtype) {
  UOp out;
  for (const Term& t : terms) {
    if (t.coeff == 0) continue;
    UOp term = t.coeff == 1 ? t.base : t.base * UOp::ConstInt(dtype, t.coeff);
    out = out ? out + term : term;
  }
  if (!out) return UOp::ConstInt(dtype, constant);
  return constant == 0 ? out : out + UOp::ConstInt(dtype, constant);
}

}  // namespace uopc
