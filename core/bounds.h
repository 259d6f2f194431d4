// Bounds analysis: the smallest and largest value an integer or bool node can take,
// computed once per node and cached in it. A RANGE lies in [0, vmax(end) - 1]; a VAR in
// its declared [lo, hi]; a LOAD anywhere in its dtype; any operation that might overflow
// its dtype gives the dtype's full range (the only sound answer).
#pragma once

#include <cstdint>

#include "core/uop.h"

namespace uopc {

/// True where bounds mean something: bool and integer dtypes except u64.
bool HasBounds(DType t);
/// Smallest value `u` can take (its dtype's minimum where HasBounds is false).
int64_t VMin(const UOp& u);
/// Largest value `u` can take.
int64_t VMax(const UOp& u);

}  // namespace uopc
