#include "passes/scope.h"

#include <algorithm>
#include <iterator>

#include "core/substitute.h"
#include "core/symbolic/simplify.h"

namespace uopc {

ScopeAnalysis::ScopeAnalysis(const UOp& root) {
  for (const UOp& u : root.Toposort()) {
    std::vector<const UOp::Node*> s;
    for (const UOp& x : u.src()) {
      const auto& xs = scope_.at(x.get());
      std::vector<const UOp::Node*> merged;
      std::set_union(s.begin(), s.end(), xs.begin(), xs.end(), std::back_inserter(merged));
      s = std::move(merged);
    }
    if (u.is(Ops::RANGE)) {
      ranges_[u.get()] = u;
      s.insert(std::lower_bound(s.begin(), s.end(), u.get()), u.get());
    }
    if (u.is(Ops::END))
      for (size_t i = 1; i < u.src().size(); ++i)
        s.erase(std::remove(s.begin(), s.end(), u.src(i).get()), s.end());
    scope_[u.get()] = std::move(s);
  }
}

std::vector<UOp> OpenRanges(const UOp& u) {
  ScopeAnalysis a(u);
  std::vector<UOp> out;
  for (const UOp::Node* r : a.Of(u)) out.push_back(a.Range(r));
  std::sort(out.begin(), out.end(), [](const UOp& x, const UOp& y) {
    return x.arg().Get<RangeArg>().idx < y.arg().Get<RangeArg>().idx;
  });
  return out;
}

bool Reaches(const UOp& root, const UOp& node) {
  for (const UOp& u : root.Toposort())
    if (u == node) return true;
  return false;
}

std::optional<int64_t> StepAlong(const UOp& index, const UOp& loop) {
  const UOp next =
      RewriteNodes(index, [&](const UOp& o, const UOp& r) { return o == loop ? loop + 1 : r; });
  if (next == index) return 0;
  return Simplify(next - index).ConstIntValue();
}

}  // namespace uopc
