// graph_rewrite: applies a PatternMatcher to a whole graph, bottom-up, to a fixed point.
// Every node's sources are rewritten before the node itself; the node is then rewritten
// until no rule applies, and whatever a rule builds is itself rewritten. Results are
// memoized per node, so a shared subgraph is rewritten once. No recursion: graphs of any
// depth are fine. A node rewritten kMaxRewriteChain times in a row is a set of rules that
// keep undoing each other: an Internal error that names them, instead of a loop forever.
// The context is typed: a rule's m.ctx<T>() must ask for the type it was given as.
#pragma once

#include <typeinfo>

#include "absl/status/statusor.h"

#include "core/pattern_matcher.h"

namespace uopc {

/// The most rewrites of one node (and of what they build) in a row.
inline constexpr int kMaxRewriteChain = 10000;

/// The fixed point of `pm` over the graph of `root`, with `ctx` (of its type) for every rule.
absl::StatusOr<UOp> GraphRewriteTyped(const UOp& root, const PatternMatcher& pm, void* ctx,
                                      const std::type_info* type);

template <typename Ctx = void>
absl::StatusOr<UOp> GraphRewrite(const UOp& root, const PatternMatcher& pm, Ctx* ctx = nullptr) {
  return GraphRewriteTyped(root, pm, const_cast<void*>(static_cast<const void*>(ctx)),
                           ctx ? &typeid(Ctx) : nullptr);
}

}  // namespace uopc
