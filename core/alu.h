// The exact semantics of every ALU op on scalar values: one definition shared by constant
// folding, the expression evaluator and the reference interpreter, so that all of them
// agree with each other and with what backends must render.
//
// Values are CONST arguments: bool for bool, int64 for every integer type (two's
// complement bits, wrapped to the type's width), double for every float type (rounded to
// the type's precision). Integer ops wrap; FLOORDIV and MOD round toward -infinity
// (-7 // 2 == -4, -7 % 2 == 1); a shift by a count outside [0, bits) gives 0 (or -1 for
// SHR of a negative value); MAX of a NaN is NaN, and every NaN is the one quiet NaN. A float cast
// to an integer truncates and saturates (NaN gives 0).
#pragma once

#include <optional>

#include "absl/types/span.h"

#include "core/arg.h"
#include "core/dtype.h"
#include "core/ops.h"

namespace uopc {

/// Converts a value (bool, int64 or double argument) to the canonical value of `to`.
/// Integer sources are read as signed unless `from` is unsigned.
Arg CastValue(const Arg& v, DType from, DType to);
/// Reinterprets the bits of a value of `from` as `to` (same size).
Arg BitcastValue(const Arg& v, DType from, DType to);
/// Evaluates ALU op `op` whose operands have dtype `in` (for WHERE: of the two values)
/// and whose result has dtype `out`. nullopt where the result is undefined: integer
/// FLOORDIV or MOD by zero, or an op the dtype does not support.
std::optional<Arg> EvalAlu(Ops op, DType in, DType out, absl::Span<const Arg> operands);
/// True for a bool/int value that is nonzero or a float value that is nonzero.
bool Truthy(const Arg& v);

}  // namespace uopc
