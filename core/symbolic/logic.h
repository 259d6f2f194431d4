// WHERE, MAX, bitwise ops and CAST:
//   where(true, a, b) -> a, where(false, a, b) -> b, where(c, a, a) -> a
//   max(x, x) -> x; max(x, y) -> x when bounds show x >= y (integers)
//   x & x -> x, x | x -> x, x ^ x -> 0; x & 0 -> 0, x | 0 -> x, x ^ 0 -> x;
//   for bools x & true -> x, x & false -> false, x | true -> true, x | false -> x
//   cast(x) to x's own dtype -> x
#pragma once

#include "core/pattern_matcher.h"

namespace uopc {

const PatternMatcher& LogicRules();

}  // namespace uopc
