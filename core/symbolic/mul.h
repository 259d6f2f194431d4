// MUL: x * 1 -> x (any dtype); for integers x * 0 -> 0, (x*c0)*c1 -> x*(c0*c1), and
// (x + y)*c -> x*c + y*c, so that index expressions become sums of scaled terms that the
// add and div/mod rules understand.
#pragma once

#include "core/pattern_matcher.h"

namespace uopc {

const PatternMatcher& MulRules();

}  // namespace uopc
