#include "passes/copy_rules.h"

#include <vector>

#include "core/graph_rewrite.h"
#include "core/placement.h"

namespace uopc {
namespace {

// A RESHAPE chain ending in a BUFFER: a view that moves no bytes.
bool ReshapeOfBuffer(const UOp& u) {
  UOp x = u;
  while (x.is(Ops::RESHAPE)) x = x.src(0);
  return x.is(Ops::BUFFER);
}

// ctx: Placement
const PatternMatcher kCopyRules("copy_rules", {
    // COLLECTIVE(x) -> x, where the ranks do nothing to x: the identity (f's forward, g's
    // gradient), or a group of one rank
    {UPat::Op({Ops::COLLECTIVE}, {{UPat::Var("x")}}, "c"),
     [](const Match& m) -> UOp {
       const CollectiveArg& c = m["c"].arg().Get<CollectiveArg>();
       return c.kind == CollectiveKind::kIdentity || c.size == 1 ? m["x"] : UOp();
     }},
    // COPY[d](x) -> x, where x has no device (it can be computed on d) or is on d already
    {UPat::Op({Ops::COPY}, {{UPat::Var("x")}}, "c"),
     [](const Match& m) -> UOp {
       absl::StatusOr<std::string> d = m.ctx<Placement>()->Of(m["x"]);
       if (!d.ok() || !(d->empty() || *d == m["c"].arg().Get<DeviceArg>().name)) return {};
       return m["x"];
     }},
    // COPY[d](RESHAPE(b, dims)) -> RESHAPE(COPY[d](b), dims): a buffer's bytes move as they lie
    {UPat::Op({Ops::COPY}, {{UPat::Op({Ops::RESHAPE}, std::nullopt, "r")}}, "c"),
     [](const Match& m) -> UOp {
       const UOp& r = m["r"];
       if (!ReshapeOfBuffer(r)) return {};
       std::vector<UOp> src(r.src().begin(), r.src().end());
       src[0] = UOp::Derived(Ops::COPY, {r.src(0)}, m["c"].arg());
       return r.WithSrc(src);
     }},
});

}  // namespace

absl::StatusOr<UOp> CopyRules(const UOp& sink, const PassContext&) {
  Placement place;
  return GraphRewrite(sink, kCopyRules, &place);
}

}  // namespace uopc
