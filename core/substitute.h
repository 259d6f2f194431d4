// Rebuilding a graph node by node: each node is rebuilt over its already rebuilt sources,
// then handed to a function that may replace it. Shared nodes are visited once; no
// recursion. The building block of passes that change specific nodes (kernelize wraps
// some REDUCEs in STAGE; the plan cache renumbers BUFFERs).
#pragma once

#include <functional>

#include "absl/container/flat_hash_map.h"

#include "core/uop.h"

namespace uopc {

/// `fn(original, rebuilt)` returns the node to use instead of `original` (return
/// `rebuilt` to keep it); `rebuilt` is `original` with its sources replaced.
UOp RewriteNodes(const UOp& root,
                 const std::function<UOp(const UOp& original, const UOp& rebuilt)>& fn);

/// `root` with each node that `with` names (by the original node) replaced by its value.
UOp ReplaceNodes(const UOp& root, const absl::flat_hash_map<const UOp::Node*, UOp>& with);

}  // namespace uopc
