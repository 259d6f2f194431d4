#include "core/symbolic/simplify.h"

#include "core/graph_rewrite.h"
#include "core/symbolic/add.h"
#include "core/symbolic/compare.h"
#include "core/symbolic/divmod.h"
#include "core/symbolic/fold.h"
#include "core/symbolic/logic.h"
#include "core/symbolic/mul.h"

namespace uopc {

const PatternMatcher& SimplifyRules() {
  static const PatternMatcher* pm = new PatternMatcher(
      FoldRules() + AddRules() + MulRules() + DivModRules() + CompareRules() + LogicRules());
  return *pm;
}

UOp Simplify(const UOp& u) {
  SumMemo sums;
  return GraphRewrite(u, SimplifyRules());
}

}  // namespace uopc
