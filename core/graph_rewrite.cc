#include "core/graph_rewrite.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"

namespace uopc {

UOp GraphRewrite(const UOp& root, const PatternMatcher& pm, void* ctx) {
  // node -> its fixed point. Keys are handles, not raw pointers: a node that a rule built
  // and dropped must stay alive while it is a key, or a new node could reuse its address.
  absl::flat_hash_map<UOp, UOp> done;
  struct Frame {
    UOp u;
    int stage;  // 0: visit sources, 1: rebuild and rewrite, 2: adopt the result of `next`
    UOp next;
  };
  std::vector<Frame> stack;
  stack.push_back({root, 0, {}});
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    if (f.stage == 0) {
      if (done.contains(f.u)) continue;
      stack.push_back({f.u, 1, {}});
      auto src = f.u.src();
      for (size_t i = src.size(); i-- > 0;)
        if (!done.contains(src[i])) stack.push_back({src[i], 0, {}});
    } else if (f.stage == 1) {
      if (done.contains(f.u)) continue;  // reached twice before its first visit ended
      absl::InlinedVector<UOp, 4> src;
      bool changed = false;
      for (const UOp& s : f.u.src()) {
        src.push_back(done.at(s));
        changed |= !(src.back() == s);
      }
      UOp x = changed ? f.u.WithSrc(src) : f.u;
      UOp r = pm.Rewrite(x, ctx);
      if (!r) {
        done.emplace(f.u, x);
        if (changed) done.emplace(x, x);
      } else if (auto it = done.find(r); it != done.end()) {
        UOp out = it->second;  // a copy: emplace may rehash and move the element
        done.emplace(f.u, std::move(out));
      } else {
        stack.push_back({f.u, 2, r});
        stack.push_back({r, 0, {}});
      }
    } else {
      UOp out = done.at(f.next);
      done.emplace(f.u, std::move(out));
    }
  }
  return done.at(root);
}

}  // namespace uopc
