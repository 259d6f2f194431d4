#include "core/pattern_matcher.h"

namespace uopc {

PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) {
  for (const Rule& r : rules_)
    for (int op = 0; op < kNumOps; ++op)
      if (r.pat.ops().Empty() || r.pat.ops().Has(static_cast<Ops>(op))) by_op_[op].push_back(&r);
}

UOp PatternMatcher::Rewrite(const UOp& u, void* ctx) const {
  Match m;
  m.ctx_ = ctx;
  for (const Rule* r : by_op_[static_cast<int>(u.op())]) {
    m.captures_.clear();
    if (!r->pat.MatchInto(u, m)) continue;
    UOp out = r->fn(m);
    if (out && !(out == u)) return out;
  }
  return UOp();
}

PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b) {
  std::vector<Rule> rules = a.rules_;
  rules.insert(rules.end(), b.rules_.begin(), b.rules_.end());
  return PatternMatcher(std::move(rules));
}

}  // namespace uopc
