// The environment variables uopc reads (UOPC_DEBUG, UOPC_VERIFY, UOPC_PRINT_AFTER, ...),
// parsed one way: a value that is not what the variable accepts is one line on stderr that
// names the variable, the value and what it accepts, once per process, and the variable
// then counts as unset; never a value half read ("2x" as 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uopc {

/// The integer in [lo, hi] that `name` holds; `fallback` when unset or bad.
int64_t EnvInt(const char* name, int64_t lo, int64_t hi, int64_t fallback);

/// 0 or 1 (also false/true, no/yes, off/on); `fallback` when unset or bad.
bool EnvBool(const char* name, bool fallback);

/// The comma-separated names `name` holds, each one of `known` (an empty list accepts
/// any); the bad ones are left out, with one line on stderr. Unset: none.
std::vector<std::string> EnvNames(const char* name, const std::vector<std::string>& known);

}  // namespace uopc
