// Constant folding: an ALU op on constants becomes the constant it computes; an integer or
// bool ALU op whose bounds pin it to one value becomes that value; constants of a
// commutative op move to the right, so that other rules need only one order.
#pragma once

#include "core/pattern_matcher.h"

namespace uopc {

const PatternMatcher& FoldRules();

}  // namespace uopc
