// The symbolic simplifier: constant folding, identities, collecting terms, div/mod rules
// that use bounds, comparisons (including the relational RANGE rule), where/max/bitwise.
// Each family is its own rule table (core/symbolic/*.h); Simplify runs them all to a
// fixed point over the graph. Every rule preserves the value of the expression for every
// assignment of its VARs and RANGEs within their bounds (for index arithmetic that does not
// overflow), which tests/core/symbolic checks by evaluating random assignments.
#pragma once

#include "core/pattern_matcher.h"

namespace uopc {

/// All simplification rules, in the order they are tried.
const PatternMatcher& SimplifyRules();
/// The simplified graph of `u`.
UOp Simplify(const UOp& u);

}  // namespace uopc
