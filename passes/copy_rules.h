// CopyRules: the rules for copies and collectives, before anything is staged. A COPY to
// where its value already is, or of a value with no device (computed where it is needed),
// is no copy; a COPY of a reshaped buffer is the reshape of the buffer's copy (its bytes
// move as they lie); a COLLECTIVE that leaves its value as it is (the identity: Megatron's
// f forward and g backward; a group of one rank) is its value. Input and output: a SINK of
// tensor-level roots.
#pragma once

#include "absl/status/statusor.h"

#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

absl::StatusOr<UOp> CopyRules(const UOp& sink, const PassContext& ctx = {});

}  // namespace uopc
