#include "runtime/memory_plan.h"

#include <algorithm>
#include <variant>
#include <vector>

namespace uopc {

void ShareTemporaries(Plan* plan) {
  const int n = static_cast<int>(plan->buffers.size());
  std::vector<int> first(n, -1), last(n, -1);
  auto use = [&](int b, int step) {
    if (first[b] < 0) first[b] = step;
    last[b] = step;
  };
  for (int i = 0; i < static_cast<int>(plan->steps.size()); ++i) {
    const auto& op = plan->steps[i].op;
    if (const auto* k = std::get_if<Plan::Kernel>(&op)) {
      for (int b : k->buffers) use(b, i);
    } else if (const auto* c = std::get_if<Plan::Copy>(&op)) {
      use(c->src, i), use(c->dst, i);
    } else {
      const auto& col = std::get<Plan::Collective>(op);
      use(col.src, i), use(col.dst, i);
    }
  }
  std::vector<int> temps;  // in the order they come to life
  for (int b = plan->num_inputs; b < n; ++b) {
    const Plan::BufferSpec& s = plan->buffers[b];
    if (s.role == Plan::Role::kTemp && s.dtype != DType::kVoid && !s.device.empty() && first[b] >= 0)
      temps.push_back(b);
  }
  std::stable_sort(temps.begin(), temps.end(), [&](int a, int b) { return first[a] < first[b]; });
  plan->arenas.clear();
  plan->arena_of.assign(n, -1);
  std::vector<int> live;  // temporaries holding an arena
  std::vector<int> free;  // arenas no temporary holds
  for (int b : temps) {
    // the arenas of temporaries whose last step came before this one's first
    std::erase_if(live, [&](int t) {
      if (last[t] >= first[b]) return false;
      free.push_back(plan->arena_of[t]);
      return true;
    });
    const Plan::BufferSpec& s = plan->buffers[b];
    const uint64_t bytes = s.bytes();
    int best = -1;
    for (int a : free) {
      const Plan::Arena& arena = plan->arenas[a];
      if (arena.device != s.device) continue;
      const bool fits = arena.bytes >= bytes;
      if (best < 0) {
        best = a;
        continue;
      }
      const Plan::Arena& was = plan->arenas[best];
      const bool was_fits = was.bytes >= bytes;
      // the smallest that holds it; else the largest (grown least)
      if (fits != was_fits ? fits : (fits ? arena.bytes < was.bytes : arena.bytes > was.bytes))
        best = a;
    }
    if (best < 0) {
      best = static_cast<int>(plan->arenas.size());
      plan->arenas.push_back({s.device, 0});
    } else {
      free.erase(std::find(free.begin(), free.end(), best));
    }
    plan->arenas[best].bytes = std::max(plan->arenas[best].bytes, bytes);
    plan->arena_of[b] = best;
    live.push_back(b);
  }
}

}  // namespace uopc
