// ErrorOf: the message of the uopc::Error that `f` throws ("no error" if it throws none),
// for tests that assert an op's error text.
#pragma once

#include <functional>
#include <string>

#include "frontend/error.h"

namespace uopc::testing {

inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace uopc::testing
