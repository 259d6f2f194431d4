// What tensor parallelism (frontend/nn.h: TensorParallel) needs of the process group beyond
// the forward and backward passes: whole tensors from the ranks' parts, for a checkpoint
// that one process can load.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "distributed/graph_collectives.h"
#include "frontend/nn.h"

namespace uopc {

/// The whole tensor of which every rank of `g` holds the part `shard` (split as `split`);
/// lazy, every rank of the group must ask for it.
Tensor GatherShard(const GraphGroup& g, const Tensor& shard, const TensorParallelSplit& split);
/// Each named tensor whole (realized in one plan): gathered where `config` splits it, as it
/// is elsewhere. Every rank of the group must call it with the same names.
std::vector<std::pair<std::string, Tensor>> GatherTensorParallel(
    const GraphGroup& g, const GptConfig& config,
    const std::vector<std::pair<std::string, Tensor*>>& tensors);

}  // namespace uopc
