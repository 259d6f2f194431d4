// Integer ADD: x + 0 -> x, and collecting terms over a whole sum: x*3 + y + x*2 + 1 + 4
// -> x*5 + y + 5, x + x -> x*2, x + x*-1 -> 0, and (x // c)*c + x % c -> x (a division
// and its remainder recombined, as unravel-then-ravel index chains need). Integer arithmetic wraps,
// and these rules hold in wrapping arithmetic too. Float sums are left alone (not associative).
//
// Collecting terms looks at a whole sum, at every ADD of it: on a chain of n terms that is
// n^2 work. While a SumMemo lives (Simplify holds one), a sum found to have nothing to
// collect is remembered with its terms' bases, and the ADD above it that adds one more
// distinct term takes them over in O(1): a chain costs O(n).
#pragma once

#include <memory>

#include "core/pattern_matcher.h"

namespace uopc {

const PatternMatcher& AddRules();

/// Scopes the memo of collected sums to one rewrite (this thread; it nests).
class SumMemo {
 public:
  SumMemo();
  ~SumMemo();
  SumMemo(const SumMemo&) = delete;
  SumMemo& operator=(const SumMemo&) = delete;
  struct State;

 private:
  std::unique_ptr<State> state_;
  State* outer_;
};

}  // namespace uopc
