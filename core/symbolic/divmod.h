// Integer FLOORDIV and MOD (floor semantics), using bounds:
//   x // 1 -> x, x % 1 -> 0
//   x // d -> 0 and x % d -> x when 0 <= x < d, for a constant or symbolic d (shown by
//     bounds, or because x is a RANGE whose end is d)
//   (q*c + r) // c -> q + r // c and (q*c + r) % c -> r % c, for a constant c > 0
//   (x // c0) // c1 -> x // (c0*c1), for constants c0, c1 > 0
// The splitting rules assume the sum does not overflow, as index arithmetic must not.
#pragma once

#include "core/pattern_matcher.h"

namespace uopc {

const PatternMatcher& DivModRules();

}  // namespace uopc
