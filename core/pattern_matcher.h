// PatternMatcher: a table of rewrite rules, each a pattern and a pure, captureless
// function from the match to a replacement (or a null UOp: "does not apply"). Rules are
// indexed by the op of their root pattern, so a node is only tried against the rules that
// can match it, and a large table stays fast. Every rule has a name, its table's and its
// place in it ("add[3]"), which a rewrite that does not end (graph_rewrite.h) reports and
// UOPC_DEBUG=3 counts (RuleCounts).
#pragma once

#include <array>
#include <string>
#include <utility>
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
  /// A table named `name`, its rules "name[0]", "name[1]", ...
  PatternMatcher(std::string name, std::vector<Rule> rules);
  explicit PatternMatcher(std::vector<Rule> rules) : PatternMatcher("rules", std::move(rules)) {}
  PatternMatcher(const PatternMatcher& o) { *this = o; }
  PatternMatcher& operator=(const PatternMatcher& o);

  /// The first rule (in table order) that matches `u` and rewrites it to a different
  /// node; null when none does. `fired`, when given, receives that rule's index.
  UOp Rewrite(const UOp& u, const Match& base, int* fired = nullptr) const;
  UOp Rewrite(const UOp& u, void* ctx = nullptr) const;
  const std::vector<Rule>& rules() const { return rules_; }
  /// Rule `i`'s name ("add[3]").
  const std::string& RuleName(int i) const { return names_[i]; }

  /// The rules of `a` followed by those of `b`.
  friend PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b);

 private:
  void Index();
  std::vector<Rule> rules_;
  std::vector<std::string> names_;
  std::array<std::vector<int>, kNumOps> by_op_;  // rule indices
};

/// How often each rule rewrote a node, by name, since the last call (which clears them);
/// counted only at UOPC_DEBUG=3 (empty otherwise), most first.
std::vector<std::pair<std::string, int64_t>> TakeRuleCounts();

}  // namespace uopc
