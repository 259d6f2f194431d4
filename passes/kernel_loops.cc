#include "passes/kernel_loops.h"

namespace uopc {

std::vector<Opt> UnrollActions(const KernelLoops& k) {
  std::vector<Opt> actions;
  if (!k.reduces) return actions;
  for (int a = 0; a < static_cast<int>(k.reduction.size()); ++a)
    if (k.reduction[a])
      for (int64_t u : {4, 8})
        if (u < *k.reduction[a] && *k.reduction[a] % u == 0)
          actions.push_back({OptOp::kUnroll, a, u});
  return actions;
}

}  // namespace uopc
