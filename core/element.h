// Elements in memory: reading and writing one element of any dtype as a CONST-style value
// (bool, int64 or double: see core/alu.h). Memory layout is the device layout every
// backend uses: little-endian, bool as one byte, f16 and bf16 as their 16-bit patterns.
#pragma once

#include <cstdint>

#include "core/arg.h"
#include "core/dtype.h"

namespace uopc {

/// Element `i` of an array of `t` at `base`.
Arg LoadElement(const void* base, DType t, int64_t i);
/// Writes `v` (a canonical value of `t`) as element `i` of an array of `t` at `base`.
void StoreElement(void* base, DType t, int64_t i, const Arg& v);

}  // namespace uopc
