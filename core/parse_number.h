// Numbers and booleans read from text a user wrote (a flag's value, an environment
// variable, a checkpoint's metadata), checked: an integer is a whole decimal number within
// its range, a real is finite and within its range (never nan or inf), a boolean is one of
// true/false, 1/0, yes/no (any case). Every program reads its numbers through these, so
// that a bad value is one line naming what was read and what it accepts, never a crash, an
// exception from a standard library call, or a silent 0.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uopc {

/// An integer from lo to hi; else "WHAT=TEXT: expected an integer from LO to HI".
absl::StatusOr<int64_t> ParseInt(absl::string_view what, absl::string_view text, int64_t lo,
                                 int64_t hi);
/// A finite number from lo to hi; else "WHAT=TEXT: expected a number from LO to HI".
absl::StatusOr<double> ParseReal(absl::string_view what, absl::string_view text, double lo,
                                 double hi);
/// true/false, 1/0, yes/no in any case; else "WHAT=TEXT: expected true or false (or 1/0,
/// yes/no)".
absl::StatusOr<bool> ParseBool(absl::string_view what, absl::string_view text);

}  // namespace uopc
