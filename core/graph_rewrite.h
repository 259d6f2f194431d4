// graph_rewrite: applies a PatternMatcher to a whole graph, bottom-up, to a fixed point.
// Every node's sources are rewritten before the node itself; the node is then rewritten
// until no rule applies, and whatever a rule builds is itself rewritten. Results are
// memoized per node, so a shared subgraph is rewritten once. No recursion: graphs of any
// depth are fine.
#pragma once

#include "core/pattern_matcher.h"

namespace uopc {

/// The fixed point of `pm` over the graph of `root`. `ctx` is passed to every rule.
UOp GraphRewrite(const UOp& root, const PatternMatcher& pm, void* ctx = nullptr);

}  // namespace uopc
