// Propagating absl::Status without boilerplate. Debian's Abseil (20220623) has no
// RETURN_IF_ERROR / ASSIGN_OR_RETURN, so the project defines its own two, once, here.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define UOPC_CONCAT_INNER_(a, b) a##b
#define UOPC_CONCAT_(a, b) UOPC_CONCAT_INNER_(a, b)

/// Returns the status of `expr` from the enclosing function if it is not OK.
#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    ::absl::Status uopc_status_ = (expr);        \
    if (!uopc_status_.ok()) return uopc_status_; \
  } while (0)

/// `ASSIGN_OR_RETURN(auto x, F())`: declares/assigns `x` from an OK StatusOr, or returns
/// its status from the enclosing function.
#define ASSIGN_OR_RETURN(lhs, expr) \
  UOPC_ASSIGN_OR_RETURN_IMPL_(UOPC_CONCAT_(uopc_statusor_, __LINE__), lhs, expr)

#define UOPC_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()
