// WHERE, MAX, bitwise ops and CAST:
//   where(true, a, b) -> a, where(false, a, b) -> b, where(c, a, a) -> a
//   max(x, x) -> x; max(x, y) -> x when bounds show x >= y (integers)
//   x & x -> x, x | x -> x, x ^ x -> 0; x & 0 -> 0, x | 0 -> x, x ^ 0 -> x;
//   for bools x & true -> x, x & false -> false, x | true -> true, x | false -> x
//   cast(x) to x's own dtype -> x
//   where(c, true, false) -> c; where(c, where(c, a, b), d) -> where(c, a, d), and the same
//   in the false branch; max(max(x, c0), c1) -> max(x, max(c0, c1)); (x ^ c) ^ c -> x;
//   x << 0 -> x, x >> 0 -> x; for bools x & !x -> false, x | !x -> true
#pragma once

#include "core/pattern_matcher.h"

namespace uopc {

const PatternMatcher& LogicRules();

}  // namespace uopc
