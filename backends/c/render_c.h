// The C-style renderer: a linearized kernel as C11 source that gcc compiles, or as CUDA C++
// that NVRTC compiles. One printer: what differs between the languages (types, math
// functions, integer wrapping, bit casts, grid ranges, parameters) is a table of data per
// language (render_c.cc's CStyle), chosen by CLang, not branches on the language. Buffers
// are `restrict` pointers (the executor never binds one buffer to two slots); f16 is
// _Float16 in C, rounded after every op as the IR defines; bf16 (and, in CUDA, f16) is
// stored as its 16 bits and computed in float, rounded to nearest even when narrowed;
// integer division and modulo use a floor helper unless bounds prove both operands
// non-negative; integer + and * wrap (gcc runs with -fwrapv; CUDA computes them unsigned);
// VARs are `int` parameters (in C, a kernel first returns if one is outside its bounds:
// said, they let gcc see that indices built from them do not wrap).
//
// C: every kernel also gets an entry `NAME_entry(void* const* bufs, const long long* vars,
// long long gchunk, long long gchunks)` with the launch convention of
// core/kernel_signature.h, which is what the plugin calls: a global range (one, from
// ThreadOuterLoop) runs only chunk gchunk of gchunks equal contiguous parts of it, so that
// gchunks threads share it (chunk 0 of 1 is all of it); other ranges are plain loops.
// CUDA: a kernel is `extern "C" __global__ void NAME(...)` taking every buffer slot (used
// or not) then the VARs as int; global and local ranges are blockIdx and threadIdx (x, y,
// z in order).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

#include "core/uop.h"

namespace uopc {

enum class CLang { kC, kCuda };

/// The helpers and includes a C translation unit of rendered kernels starts with (once).
std::string CPrelude();
/// The helpers both languages share, defined with UOPC_FN (which the prelude of each
/// language defines: `static inline`, `static __device__ __forceinline__`).
std::string CStyleHelpers();
/// The source of linearized kernel `program` as function `name` in `lang`.
absl::StatusOr<std::string> RenderC(absl::Span<const UOp> program, absl::string_view name,
                                    CLang lang = CLang::kC);

}  // namespace uopc
