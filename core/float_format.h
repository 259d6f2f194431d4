// The shortest decimal text of a float value that reads back (strtod, then rounding to
// its dtype) to the same value: "0.1", "2.0", "1e+30"; "inf", "-inf", "nan".
#pragma once

#include <string>

#include "core/dtype.h"

namespace uopc {

/// Shortest round-tripping decimal of `v` as a value of float dtype `dtype`; always has a
/// '.', an exponent or is a name, so it never reads as an integer.
std::string FormatFloat(double v, DType dtype);

}  // namespace uopc
