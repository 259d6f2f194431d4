// CHECK for internal invariants (a failure is a bug in uopc, never a user error): prints
// the condition, the place and a message, then aborts. Debian's Abseil (20220623) has no
// absl/log, hence this.
//
//   UOPC_CHECK(n > 0) << "node " << name << " has no sources";
#pragma once

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace uopc::internal {

class CheckFailure {
 public:
  CheckFailure(const char* cond, const char* file, int line) {
    msg_ << file << ":" << line << ": internal error: CHECK(" << cond << ") failed: ";
  }
  [[noreturn]] ~CheckFailure() {
    std::cerr << msg_.str() << std::endl;
    std::abort();
  }
  template <typename T>
  CheckFailure& operator<<(const T& v) {
    msg_ << v;
    return *this;
  }

 private:
  std::ostringstream msg_;
};

/// After a switch with a case for every enumerator: a value that is none of them.
[[noreturn]] inline void Unreachable(const char* what, const char* file, int line) {
  std::cerr << file << ":" << line << ": internal error: " << what << " is no value of its enum"
            << std::endl;
  std::abort();
}

}  // namespace uopc::internal

#define UOPC_CHECK(cond) \
  if (cond) {            \
  } else                 \
    ::uopc::internal::CheckFailure(#cond, __FILE__, __LINE__)

// After a switch that has a case for every enumerator (no `default:`, -Werror=switch).
#define UOPC_UNREACHABLE(what) ::uopc::internal::Unreachable(what, __FILE__, __LINE__)
