#include "distributed/graph_collectives.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace uopc {

GraphGroup::GraphGroup(ProcessGroup& group)
    : group_(group), number_(RegisterCollectiveGroup(this)) {}

GraphGroup::~GraphGroup() { UnregisterCollectiveGroup(number_); }

CollectiveArg GraphGroup::Arg(CollectiveKind kind, CollectiveKind grad, Ops reduce) const {
  return CollectiveArg{kind, grad, reduce, number_, size()};
}

CollectiveGroup::Wait GraphGroup::Start(const CollectiveArg& c, const void* in, void* out,
                                        int64_t count, DType dtype) {
  const ReduceOp op = c.reduce == Ops::MAX ? ReduceOp::kMax : ReduceOp::kSum;
  auto waiting = [](std::shared_ptr<Work> w) -> Wait { return [w] { return w->Wait(); }; };
  switch (c.kind) {
    case CollectiveKind::kIdentity:
      if (in != out) std::memcpy(out, in, count * DTypeSize(dtype));
      return [] { return absl::OkStatus(); };
    case CollectiveKind::kAllReduce:
      if (in != out) std::memcpy(out, in, count * DTypeSize(dtype));
      return waiting(group_.AllReduce(out, count, dtype, op));
    case CollectiveKind::kAllGather: return waiting(group_.AllGather(in, out, count, dtype));
    case CollectiveKind::kReduceScatter:
      if (count % size()) {
        absl::Status bad = absl::InvalidArgumentError(absl::StrCat(
            "reduce_scatter: ", count, " elements do not split over ", size(), " ranks"));
        return [bad] { return bad; };
      }
      return waiting(group_.ReduceScatter(in, out, count / size(), dtype, op));
  }
  return [] { return absl::InternalError("collective: an unknown kind"); };
}

Tensor CopyToGroup(const GraphGroup& g, const Tensor& x) {
  return x.Collective(g.Arg(CollectiveKind::kIdentity, CollectiveKind::kAllReduce));
}

Tensor ReduceFromGroup(const GraphGroup& g, const Tensor& x) {
  return x.Collective(g.Arg(CollectiveKind::kAllReduce, CollectiveKind::kIdentity));
}

Tensor AllReduceOf(const GraphGroup& g, const Tensor& x, Ops reduce) {
  return x.Collective(g.Arg(CollectiveKind::kAllReduce, CollectiveKind::kAllReduce, reduce));
}

Tensor AllGatherOf(const GraphGroup& g, const Tensor& x) {
  return x.Collective(g.Arg(CollectiveKind::kAllGather, CollectiveKind::kReduceScatter));
}

Tensor ReduceScatterOf(const GraphGroup& g, const Tensor& x) {
  return x.Collective(g.Arg(CollectiveKind::kReduceScatter, CollectiveKind::kAllGather));
}

}  // namespace uopc
