#include "core/symbolic/fold.h"

#include "core/alu.h"
#include "core/bounds.h"

namespace uopc {
namespace {

// op(c0, c1, ...) -> its value (not when undefined: division by zero stays for the verifier)
UOp FoldConstants(const Match& m) {
  const UOp& n = m["n"];
  absl::InlinedVector<Arg, 3> values;
  for (const UOp& s : n.src()) {
    if (!s.is(Ops::CONST)) return UOp();
    values.push_back(s.arg());
  }
  DType in = n.is(Ops::WHERE) ? n.src(1).dtype() : n.src(0).dtype();
  std::optional<Arg> v = EvalAlu(n.op(), in, n.dtype(), values);
  return v ? UOp::ConstFromArg(n.dtype(), *v) : UOp();
}

// vmin(n) == vmax(n) -> that value
UOp FoldBounds(const Match& m) {
  const UOp& n = m["n"];
  if (!HasBounds(n.dtype()) || VMin(n) != VMax(n)) return UOp();
  return UOp::ConstInt(n.dtype(), VMin(n));
}

// c op x -> x op c, for commutative op
UOp ConstRight(const Match& m) {
  const UOp& n = m["n"];
  if (!n.src(0).is(Ops::CONST) || n.src(1).is(Ops::CONST)) return UOp();
  return n.WithSrc({n.src(1), n.src(0)});
}

}  // namespace

const PatternMatcher& FoldRules() {
  static const PatternMatcher* pm = new PatternMatcher("fold", {
      {UPat::Op(OpsInGroup(kGroupAlu), std::nullopt, "n"), FoldConstants},
      {UPat::Op(OpsInGroup(kGroupAlu), std::nullopt, "n"), FoldBounds},
      {UPat::Op(OpsInGroup(kGroupCommutative), std::nullopt, "n"), ConstRight},
  });
  return *pm;
}

}  // namespace uopc
