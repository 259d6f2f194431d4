// The C renderer: a linearized kernel as C11 source that gcc compiles. Buffers are
// `restrict` pointers (the executor never binds one buffer to two slots); f16 is
// _Float16, rounded after every op as the IR defines; bf16 is stored as a 16-bit integer
// and computed in float, converted with a shift (widen) and round-to-nearest-even
// (narrow); integer division and modulo use a floor helper unless bounds prove both
// operands non-negative; VARs are `int` parameters. Every kernel also gets an entry
// `NAME_entry(void* const* bufs, const long long* vars)` with the launch convention of
// core/kernel_signature.h, which is what the plugin calls.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

#include "core/uop.h"

namespace uopc {

/// The helpers and includes a translation unit of rendered kernels starts with (once).
std::string CPrelude();
/// The C source of linearized kernel `program` as function `name` (plus its entry).
absl::StatusOr<std::string> RenderC(absl::Span<const UOp> program, absl::string_view name);

}  // namespace uopc
