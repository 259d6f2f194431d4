// PatternMatcher: a table of rewrite rules, each a pattern and a pure, captureless
// function from the match to a replacement (or a null UOp: "does not apply"). Rules are
// indexed by the op of their root pattern, so a node is only tried against the rules that
// can match it, and a large table stays fast.
#pragma once

#include <array>
#include <vector>

#include "core/upat.h"

namespace uopc {

/// A rule's function: the replacement, or a null UOp when the rule does not apply.
using RewriteFn = UOp (*)(const Match& m);

struct Rule {
  UPat pat;
  RewriteFn fn;
};

class PatternMatcher {
 public:
  PatternMatcher() = default;
  explicit PatternMatcher(std::vector<Rule> rules);

  /// The first rule (in table order) that matches `u` and rewrites it to a different
  /// node; null when none does.
  UOp Rewrite(const UOp& u, void* ctx = nullptr) const;
  const std::vector<Rule>& rules() const { return rules_; }

  /// The rules of `a` followed by those of `b`.
  friend PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b);

 private:
  std::vector<Rule> rules_;
  std::array<std::vector<const Rule*>, kNumOps> by_op_;
};

}  // namespace uopc
