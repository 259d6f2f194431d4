#include "passes/index_sums.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/substitute.h"
#include "passes/lowered_steps.h"
#include "passes/scope.h"

namespace uopc {
namespace {

// The terms of an integer sum: its ADDs' operands, left to right.
void Terms(const UOp& x, std::vector<UOp>& out) {
  if (x.is(Ops::ADD) && IsInt(x.dtype())) {
    Terms(x.src(0), out);
    Terms(x.src(1), out);
    return;
  }
  out.push_back(x);
}

}  // namespace

UOp OrderIndexSums(const UOp& kernel) {
  const ScopeAnalysis scopes(kernel);
  // a loop's depth: the loops still open where it ends, plus those its END opens before it
  absl::flat_hash_map<const UOp::Node*, int> depth;
  for (const UOp& u : kernel.Toposort())
    if (u.is(Ops::END))
      for (size_t i = 1; i < u.src().size(); ++i)
        depth[u.src(i).get()] = static_cast<int>(scopes.Of(u).size() + i - 1);
  // a term's place: the depth of the deepest loop it uses (-1: none)
  auto place = [&](const UOp& t) {
    int d = -1;
    for (const UOp::Node* r : scopes.Of(t)) {
      auto it = depth.find(r);
      d = std::max(d, it == depth.end() ? 0 : it->second);
    }
    return d;
  };
  return RewriteNodes(kernel, [&](const UOp& orig, const UOp& rebuilt) {
    if (!orig.is(Ops::INDEX) || orig.src().size() < 2 || !orig.src(1).is(Ops::ADD)) return rebuilt;
    // (placed by the original's terms, which the scopes know; rebuilt from the rebuilt's)
    std::vector<UOp> terms, orig_terms;
    Terms(rebuilt.src(1), terms);
    Terms(orig.src(1), orig_terms);
    if (orig_terms.size() != terms.size()) return rebuilt;
    std::vector<size_t> order(terms.size());
    std::vector<int> at(terms.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i, at[i] = place(orig_terms[i]);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at[a] < at[b]; });
    // the deepest loop that steps the index by one is added last (a base plus it), after
    // the terms of loops inside it that step it farther (a tile's rows of a group)
    size_t unit = order.size();
    for (size_t i = 0; i < order.size(); ++i)
      if (orig_terms[order[i]].is(Ops::RANGE)) unit = i;
    if (unit < order.size())
      std::rotate(order.begin() + unit, order.begin() + unit + 1, order.end());
    UOp sum = terms[order[0]];
    for (size_t i = 1; i < order.size(); ++i)
      sum = UOp::Make(Ops::ADD, sum.dtype(), {sum, terms[order[i]]});
    if (sum == rebuilt.src(1)) return rebuilt;
    std::vector<UOp> src(rebuilt.src().begin(), rebuilt.src().end());
    src[1] = sum;
    return rebuilt.WithSrc(src);
  });
}

absl::StatusOr<UOp> IndexSums(const UOp& lowered, const PassContext&) {
  return MapKernels(lowered, "index_sums",
                    [](const UOp& k) -> absl::StatusOr<UOp> { return OrderIndexSums(k); });
}

}  // namespace uopc
