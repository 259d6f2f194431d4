#include "core/graph_rewrite.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace uopc {

namespace {

// The rules that fire, over and over, rewriting `u` (the rewrites that did not end): the
// names of the last 16 of 2 x 16 rewrites from it, in order, repeats dropped.
std::string CyclingRules(const UOp& u, const PatternMatcher& pm, const Match& base) {
  std::vector<std::string> names;
  UOp x = u;
  for (int step = 0; step < 32 && x; ++step) {
    int fired = -1;
    x = pm.Rewrite(x, base, &fired);
    if (x && step >= 16 && std::find(names.begin(), names.end(), pm.RuleName(fired)) == names.end())
      names.push_back(pm.RuleName(fired));
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<UOp> GraphRewriteTyped(const UOp& root, const PatternMatcher& pm, void* ctx,
                                      const std::type_info* type) {
  Match base;
  base.ctx_ = ctx;
  base.ctx_type_ = type;
  // node -> its fixed point. Keys are handles, not raw pointers: a node that a rule built
  // and dropped must stay alive while it is a key, or a new node could reuse its address.
  absl::flat_hash_map<UOp, UOp> done;
  struct Frame {
    UOp u;
    int stage;  // 0: visit sources, 1: rebuild and rewrite, 2: adopt the result of `next`
    UOp next;
    int chain = 0;  // rewrites in a row that led to `u`
  };
  std::vector<Frame> stack;
  stack.push_back({root, 0, {}});
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    if (f.stage == 0) {
      if (done.contains(f.u)) continue;
      stack.push_back({f.u, 1, {}, f.chain});
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
      UOp r = pm.Rewrite(x, base);
      if (!r) {
        done.emplace(f.u, x);
        if (changed) done.emplace(x, x);
      } else if (auto it = done.find(r); it != done.end()) {
        UOp out = it->second;  // a copy: emplace may rehash and move the element
        done.emplace(f.u, std::move(out));
      } else if (f.chain >= kMaxRewriteChain) {
        return absl::InternalError(absl::StrCat(
            "graph_rewrite: a node was rewritten ", kMaxRewriteChain,
            " times in a row; these rules keep undoing each other: ", CyclingRules(x, pm, base),
            " (at ", OpName(x.op()), ")"));
      } else {
        stack.push_back({f.u, 2, r});
        stack.push_back({r, 0, {}, f.chain + 1});
      }
    } else {
      UOp out = done.at(f.next);
      done.emplace(f.u, std::move(out));
    }
  }
  return done.at(root);
}

}  // namespace uopc
