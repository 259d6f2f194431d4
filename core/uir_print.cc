#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "core/check.h"
#include "core/float_format.h"
#include "core/uir.h"

namespace uopc {
namespace {

// The dtype an inline literal of this kind of value has.
DType LiteralDType(const Arg& v) {
  if (v.Is<bool>()) return DType::kBool;
  if (v.Is<double>()) return DType::kF32;
  return DType::kI32;
}

bool Inlinable(const UOp& u) { return u.is(Ops::CONST) && u.dtype() == LiteralDType(u.arg()); }

std::string Literal(const UOp& c) {
  const Arg& v = c.arg();
  if (const bool* b = v.TryGet<bool>()) return *b ? "true" : "false";
  if (const double* d = v.TryGet<double>()) return FormatFloat(*d, c.dtype());
  if (c.dtype() == DType::kU64) return absl::StrCat(static_cast<uint64_t>(v.Get<int64_t>()));
  return absl::StrCat(v.Get<int64_t>());
}

std::string Ints(const std::vector<int>& v) { return absl::StrJoin(v, ","); }

// The argument's `key=value` fields.
std::string ArgAttrs(const Arg& arg) {
  if (const auto* p = arg.TryGet<ParamArg>())
    return absl::StrCat("slot=", p->slot, p->device.empty() ? "" : " device=", p->device);
  if (const auto* v = arg.TryGet<VarArg>())
    return absl::StrCat("name=", v->name, " lo=", v->lo, " hi=", v->hi);
  if (const auto* r = arg.TryGet<RangeArg>())
    return absl::StrCat("idx=", r->idx, " kind=", RangeKindName(r->kind));
  if (const auto* a = arg.TryGet<Axes>()) return absl::StrCat("axes=", Ints(a->v));
  if (const auto* r = arg.TryGet<ReduceArg>())
    return absl::StrCat("op=", OpName(r->op), " axes=", Ints(r->axes));
  if (const auto* d = arg.TryGet<DeviceArg>())
    return d->name.empty() ? "" : absl::StrCat("device=", d->name);
  if (const auto* c = arg.TryGet<CollectiveArg>())
    return absl::StrCat("kind=", CollectiveKindName(c->kind), " grad=", CollectiveKindName(c->grad),
                        " op=", OpName(c->reduce), " group=", c->group, " size=", c->size);
  return "";
}

bool PrintsDType(const UOp& u) {
  switch (u.op()) {
    case Ops::CONST: return u.dtype() != LiteralDType(u.arg());
    case Ops::VAR: return u.dtype() != DType::kI32;
    case Ops::BUFFER:
    case Ops::ALLOC:
    case Ops::IOTA:
    case Ops::CAST:
    case Ops::BITCAST: return true;
    case Ops::SINK: case Ops::RANGE: case Ops::INDEX: case Ops::LOAD: case Ops::STORE:
    case Ops::END:
    case Ops::BARRIER:
    case Ops::AFTER:
    case Ops::RESHAPE:
    case Ops::EXPAND:
    case Ops::PERMUTE:
    case Ops::PAD: case Ops::SHRINK: case Ops::FLIP: case Ops::REDUCE: case Ops::STAGE:
    case Ops::COPY:
    case Ops::ASSIGN:
    case Ops::COLLECTIVE:
    case Ops::MATMUL:
    case Ops::EXP2:
    case Ops::LOG2:
    case Ops::SIN: case Ops::SQRT: case Ops::RECIP: case Ops::TRUNC: case Ops::ADD:
    case Ops::MUL: case Ops::FDIV: case Ops::FLOORDIV: case Ops::MOD: case Ops::MAX:
    case Ops::CMPLT: case Ops::CMPNE: case Ops::CMPEQ: case Ops::AND: case Ops::OR:
    case Ops::XOR: case Ops::SHL: case Ops::SHR: case Ops::WHERE: case Ops::MULACC:
      return DerivedDType(u.op(), u.src()) != u.dtype();
  }
  UOPC_UNREACHABLE("an op");
}

}  // namespace

std::string ToUir(const UOp& root) {
  std::string out;
  absl::flat_hash_map<const UOp::Node*, int> ids;
  for (const UOp& u : root.Toposort()) {
    if (Inlinable(u) && !(u == root)) continue;
    int id = ids.size();
    ids[u.get()] = id;
    std::vector<std::string> operands;
    if (u.is(Ops::CONST)) operands.push_back(Literal(u));
    if (const auto* p = u.arg().TryGet<ParamArg>()) operands.push_back(absl::StrCat(p->size));
    for (const UOp& s : u.src())
      operands.push_back(Inlinable(s) ? Literal(s) : absl::StrCat("%", ids.at(s.get())));
    std::vector<std::string> attrs;
    if (PrintsDType(u)) attrs.push_back(absl::StrCat("dtype=", DTypeName(u.dtype())));
    if (std::string a = ArgAttrs(u.arg()); !a.empty()) attrs.push_back(a);
    absl::StrAppend(&out, "%", id, " = ", OpName(u.op()));
    if (!operands.empty()) absl::StrAppend(&out, " ", absl::StrJoin(operands, ", "));
    if (!attrs.empty()) absl::StrAppend(&out, " : ", absl::StrJoin(attrs, " "));
    out += '\n';
  }
  return out;
}

}  // namespace uopc
