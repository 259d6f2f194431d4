#include "core/serialize.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "core/status_macros.h"
#include "core/uop.pb.h"

namespace uopc {
namespace {

void WriteArg(const Arg& a, proto::Node* n) {
  if (const bool* b = a.TryGet<bool>())
    n->set_b(*b);
  else if (const int64_t* i = a.TryGet<int64_t>())
    n->set_i(*i);
  else if (const double* f = a.TryGet<double>())
    n->set_f(*f);
  else if (const auto* p = a.TryGet<ParamArg>()) {
    n->mutable_param()->set_slot(p->slot);
    n->mutable_param()->set_size(p->size);
    if (!p->device.empty()) n->mutable_param()->set_device(p->device);
  } else if (const auto* v = a.TryGet<VarArg>()) {
    n->mutable_var()->set_name(v->name);
    n->mutable_var()->set_lo(v->lo);
    n->mutable_var()->set_hi(v->hi);
  } else if (const auto* r = a.TryGet<RangeArg>()) {
    n->mutable_range()->set_idx(r->idx);
    n->mutable_range()->set_kind(std::string(RangeKindName(r->kind)));
  } else if (const auto* x = a.TryGet<Axes>()) {
    for (int v : x->v) n->mutable_axes()->add_axes(v);
  } else if (const auto* r = a.TryGet<ReduceArg>()) {
    n->mutable_reduce()->set_op(std::string(OpName(r->op)));
    for (int v : r->axes) n->mutable_reduce()->add_axes(v);
  } else if (const auto* d = a.TryGet<DeviceArg>()) {
    n->set_device(d->name);
  } else if (const auto* c = a.TryGet<CollectiveArg>()) {
    proto::CollectiveArg* o = n->mutable_collective();
    o->set_kind(std::string(CollectiveKindName(c->kind)));
    o->set_grad(std::string(CollectiveKindName(c->grad)));
    o->set_reduce(std::string(OpName(c->reduce)));
    o->set_group(c->group);
    o->set_size(c->size);
  }
}

absl::StatusOr<Arg> ReadArg(const proto::Node& n, int index) {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("serialized graph: node ", index, " (", n.op(), "): ", what));
  };
  switch (n.arg_case()) {
    case proto::Node::kB: return Arg(n.b());
    case proto::Node::kI: return Arg(static_cast<int64_t>(n.i()));
    case proto::Node::kF: return Arg(n.f());
    case proto::Node::kParam:
      return Arg(ParamArg{n.param().slot(), n.param().size(), n.param().device()});
    case proto::Node::kVar: return Arg(VarArg{n.var().name(), n.var().lo(), n.var().hi()});
    case proto::Node::kRange: {
      RangeKind kind;
      if (!ParseRangeKind(n.range().kind(), &kind))
        return bad(absl::StrCat("unknown range kind '", n.range().kind(), "'"));
      return Arg(RangeArg{n.range().idx(), kind});
    }
    case proto::Node::kAxes: return Arg(Axes{{n.axes().axes().begin(), n.axes().axes().end()}});
    case proto::Node::kReduce: {
      std::optional<Ops> op = ParseOp(n.reduce().op());
      if (!op) return bad(absl::StrCat("unknown reduce op '", n.reduce().op(), "'"));
      return Arg(ReduceArg{*op, {n.reduce().axes().begin(), n.reduce().axes().end()}});
    }
    case proto::Node::kDevice: return Arg(DeviceArg{n.device()});
    case proto::Node::kCollective: {
      const proto::CollectiveArg& c = n.collective();
      CollectiveArg out{.group = c.group(), .size = c.size()};
      std::optional<Ops> reduce = ParseOp(c.reduce());
      if (!ParseCollectiveKind(c.kind(), &out.kind) || !ParseCollectiveKind(c.grad(), &out.grad) ||
          !reduce)
        return bad(absl::StrCat("unknown collective '", c.kind(), "' / '", c.grad(), "' / '",
                                c.reduce(), "'"));
      out.reduce = *reduce;
      return Arg(out);
    }
    case proto::Node::ARG_NOT_SET: return Arg();
  }
  return bad("unknown argument");
}

// Whether `a` is the kind of argument `op` carries (constants: any value kind).
bool ArgFits(Ops op, const Arg& a) {
  switch (OpArgKind(op)) {
    case ArgKind::None: return a.Empty();
    case ArgKind::Const: return a.Is<bool>() || a.Is<int64_t>() || a.Is<double>();
    case ArgKind::Var: return a.Is<VarArg>();
    case ArgKind::Param: return a.Is<ParamArg>();
    case ArgKind::Range: return a.Is<RangeArg>();
    case ArgKind::Axes: return a.Is<Axes>();
    case ArgKind::Reduce: return a.Is<ReduceArg>();
    case ArgKind::Device: return a.Is<DeviceArg>();
    case ArgKind::Collective: return a.Is<CollectiveArg>();
  }
  return false;
}

}  // namespace

std::string SerializeGraph(const UOp& root) {
  proto::Graph g;
  g.set_version(kUOpFormatVersion);
  absl::flat_hash_map<const UOp::Node*, uint32_t> index;
  for (const UOp& u : root.Toposort()) {
    proto::Node* n = g.add_nodes();
    n->set_op(std::string(OpName(u.op())));
    n->set_dtype(std::string(DTypeName(u.dtype())));
    for (const UOp& s : u.src()) n->add_src(index.at(s.get()));
    WriteArg(u.arg(), n);
    index[u.get()] = static_cast<uint32_t>(index.size());
  }
  return g.SerializeAsString();
}

absl::StatusOr<UOp> DeserializeGraph(absl::string_view bytes) {
  proto::Graph g;
  if (!g.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return absl::InvalidArgumentError(
        absl::StrCat("serialized graph: ", bytes.size(), " bytes that are not a uopc.proto.Graph"));
  if (g.version() != kUOpFormatVersion)
    return absl::InvalidArgumentError(absl::StrCat("serialized graph: format version ", g.version(),
                                                   "; this build reads version ",
                                                   kUOpFormatVersion));
  if (g.nodes().empty()) return absl::InvalidArgumentError("serialized graph: no nodes");
  std::vector<UOp> nodes;
  for (int i = 0; i < g.nodes_size(); ++i) {
    const proto::Node& n = g.nodes(i);
    auto bad = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("serialized graph: node ", i, " (", n.op(), "): ", what));
    };
    std::optional<Ops> op = ParseOp(n.op());
    if (!op) return bad("unknown op");
    std::optional<DType> dtype = ParseDType(n.dtype());
    if (!dtype) return bad(absl::StrCat("unknown dtype '", n.dtype(), "'"));
    if (*dtype == DType::kVoid && !DerivedDType(*op, {})) return bad("dtype void for a value");
    std::vector<UOp> src;
    for (uint32_t s : n.src()) {
      if (s >= nodes.size()) return bad(absl::StrCat("source ", s, " is not an earlier node"));
      src.push_back(nodes[s]);
    }
    int arity = OpArity(*op);
    if ((arity >= 0 && static_cast<int>(src.size()) != arity) ||
        static_cast<int>(src.size()) < OpMinArity(*op))
      return bad(absl::StrCat(src.size(), " sources"));
    ASSIGN_OR_RETURN(Arg arg, ReadArg(n, i));
    if (!ArgFits(*op, arg)) return bad("argument of the wrong kind");
    nodes.push_back(*op == Ops::CONST ? UOp::ConstFromArg(*dtype, arg)
                                      : UOp::Make(*op, *dtype, src, std::move(arg)));
  }
  return nodes.back();
}

}  // namespace uopc
