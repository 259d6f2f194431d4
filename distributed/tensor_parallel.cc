#include "distributed/tensor_parallel.h"

namespace uopc {

Tensor GatherShard(const GraphGroup& g, const Tensor& shard, const TensorParallelSplit& split) {
  // the split axis first, so that the ranks' parts lie one after another, gathered, put back
  std::vector<SymInt> view(split.view.begin(), split.view.end());
  view[split.axis] = split.view[split.axis] / g.size();
  std::vector<int> order{split.axis}, back(view.size());
  for (int d = 0; d < static_cast<int>(view.size()); ++d)
    if (d != split.axis) order.push_back(d);
  for (size_t d = 0; d < order.size(); ++d) back[order[d]] = static_cast<int>(d);
  TensorShape whole = shard.shape();
  whole[split.dim] = whole[split.dim].value() * g.size();
  return AllGatherOf(g, shard.Reshape(view).Permute(order)).Permute(back).Reshape(whole);
}

std::vector<std::pair<std::string, Tensor>> GatherTensorParallel(
    const GraphGroup& g, const GptConfig& config,
    const std::vector<std::pair<std::string, Tensor*>>& tensors) {
  std::vector<std::pair<std::string, Tensor>> out;
  std::vector<Tensor*> realize;
  for (const auto& [name, t] : tensors) {
    std::optional<TensorParallelSplit> split = TensorParallelSplitOf(config, name);
    out.emplace_back(name, split ? GatherShard(g, t->Detach(), *split) : t->Detach());
  }
  for (auto& [name, t] : out) realize.push_back(&t);
  Tensor::RealizeAll(realize);
  return out;
}

}  // namespace uopc
