// The symbolic simplifier: constant folding, identities, collecting terms, div/mod rules
// that use bounds, comparisons (including the relational RANGE rule), where/max/bitwise,
// and a value under a gate simplified knowing the gate holds (where(valid, idx, 0)).
// Each family is its own rule table (core/symbolic/*.h); Simplify runs them all to a
// fixed point over the graph. Every rule preserves the value of the expression for every
// assignment of its VARs and RANGEs within their bounds, which tests/core/symbolic checks
// by evaluating random assignments.
//
// Integer semantics (decided once, for every rule): i32 and i64 arithmetic wraps, as
// core/alu.h computes it, and a rule must hold in wrapping arithmetic, checked with VARs
// and constants near the i32 limits. A rule that holds only without overflow (dividing a
// sum by a divisor of some of its terms, (x * c0) // c1, b * c % b, comparisons moved
// through a product) fires only where bounds prove that nothing wraps. One assumption is
// made: a loop index (RANGE) whose end is unbounded (loaded) does not make a sum wrap,
// since an index past the i32 range addresses nothing; so such a loop still splits, as
// the seed requires ((i*8 + j) // 8 -> i + j // 8 with j < a loaded end).
#pragma once

#include "core/pattern_matcher.h"

namespace uopc {

/// All simplification rules, in the order they are tried.
const PatternMatcher& SimplifyRules();
/// The simplified graph of `u`; `u` itself where simplifying would leave a division by the
/// constant 0 (a divisor that is always 0: the graph is wrong, and stays as written).
UOp Simplify(const UOp& u);

}  // namespace uopc
