#include "passes/gpu_opts.h"

namespace uopc {

std::vector<Opt> GpuDefaultOpts(const KernelLoops&, const Target&) { return {}; }

std::vector<Opt> GpuOptActions(const KernelLoops& k, const Target&) { return UnrollActions(k); }

}  // namespace uopc
