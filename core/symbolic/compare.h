// Comparisons on integers and bools:
//   RANGE r < r.src[0] -> true     (relational: inside the loop, r < its end)
//   x < x -> false, x != x -> false, x == x -> true
//   x + c0 < c1 -> x < c1 - c0, when x + c0 cannot overflow
//   x * c0 < c1 -> x < ceil(c1 / c0), for c0 > 0, when x * c0 cannot overflow
// (comparisons that bounds decide are folded by the fold rules).
#pragma once

#include "core/pattern_matcher.h"

namespace uopc {

const PatternMatcher& CompareRules();

}  // namespace uopc
