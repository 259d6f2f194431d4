// `uopc render --target T [FILE]`: the kernels a target gets for a UIR graph. A tensor-level
// graph is lowered by the standard pipeline for T (a loop-level kernel, a SINK of stores in
// loops, is taken as it is); each kernel is printed as the target's backend renders it,
// with its launch dims, and for a GPU target with the registers, stack and spills that
// NVRTC's ptxas reports for it. T: "host" (this machine's CPU, as the C plugin reads it),
// a GPU architecture ("sm_90", from backends/cuda/gpu_target.h's table; no GPU needed), or
// a target's text form ("class=cpu vector_bits=256 registers=16 ...": core/target.h).
#pragma once

namespace uopc {

/// Runs the command on its arguments (after "render"); the exit status.
int RenderCommand(int argc, char** argv);

/// Its --help text.
extern const char kRenderUsage[];

}  // namespace uopc
