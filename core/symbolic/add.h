// Integer ADD: x + 0 -> x, and collecting terms over a whole sum: x*3 + y + x*2 + 1 + 4
// -> x*5 + y + 5, x + x -> x*2, x + x*-1 -> 0, and (x // c)*c + x % c -> x (a division
// and its remainder recombined, as unravel-then-ravel index chains need). Integer arithmetic wraps,
// and these rules hold in wrapping arithmetic too. Float sums are left alone (not associative).
#pragma once

#include "core/pattern_matcher.h"

namespace uopc {

const PatternMatcher& AddRules();

}  // namespace uopc
