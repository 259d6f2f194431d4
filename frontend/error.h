// The one exception type of the frontend: a Tensor op that cannot be built (shapes that do
// not broadcast, a dtype an op does not take) or a realize that fails throws uopc::Error
// carrying the absl::Status, so that `a.Matmul(b)` reads naturally. Everything below the
// frontend returns absl::Status.
#pragma once

#include <stdexcept>
#include <string>

#include "absl/status/status.h"

namespace uopc {

class Error : public std::runtime_error {
 public:
  explicit Error(absl::Status status)
      : std::runtime_error(std::string(status.message())), status_(std::move(status)) {}
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

/// Throws Error(status) unless it is OK.
inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw Error(status);
}

/// Throws an InvalidArgument Error with `message`.
[[noreturn]] inline void ThrowInvalid(const std::string& message) {
  throw Error(absl::InvalidArgumentError(message));
}

}  // namespace uopc
