#include "core/verify.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "core/check.h"
#include "core/status_macros.h"
#include "core/symbolic/simplify.h"

namespace uopc {
namespace {

using Shapes = absl::flat_hash_map<const UOp::Node*, Shape>;

class NodeCheck {
 public:
  NodeCheck(const UOp& u, const Shapes& shapes) : u_(u), shapes_(shapes) {}

  absl::StatusOr<Shape> Run();

 private:
  const Shape& S(size_t i) const { return shapes_.at(u_.src(i).get()); }
  DType T(size_t i) const { return u_.src(i).dtype(); }

  // "i32 (4, 8)" for source i
  std::string Describe(size_t i) const {
    return absl::StrCat(DTypeName(T(i)), " ", ShapeToString(S(i)));
  }
  std::string Operands() const {
    std::vector<std::string> parts;
    for (size_t i = 0; i < u_.src().size(); ++i) parts.push_back(Describe(i));
    return parts.empty() ? "no operands" : absl::StrCat("operands ", absl::StrJoin(parts, ", "));
  }
  absl::Status Fail(absl::string_view what, absl::string_view expected) const {
    return absl::InvalidArgumentError(absl::StrCat(OpName(u_.op()), " (", DTypeName(u_.dtype()),
                                                   ", ", Operands(), "): ", what, "; expected ",
                                                   expected));
  }

  absl::Status CheckStructure() const;
  absl::Status CheckDTypes() const;
  absl::StatusOr<Shape> ElementwiseShape() const;
  absl::StatusOr<std::vector<Dim>> DimSources(size_t from) const;
  absl::StatusOr<Shape> MovementShape() const;
  absl::Status CheckAxes(const std::vector<int>& axes, size_t rank, bool permutation) const;

  const UOp& u_;
  const Shapes& shapes_;
};

bool IsIndexable(UOp b) {
  while (b.is(Ops::AFTER)) b = b.src(0);
  return b.is(Ops::BUFFER) || b.is(Ops::ALLOC);
}

absl::Status NodeCheck::CheckStructure() const {
  int n = static_cast<int>(u_.src().size()), arity = OpArity(u_.op());
  if ((arity >= 0 && n != arity) || n < OpMinArity(u_.op()))
    return Fail(absl::StrCat(n, " sources"),
                arity >= 0 ? absl::StrCat(arity) : absl::StrCat("at least ", OpMinArity(u_.op())));
  const Arg& a = u_.arg();
  bool ok = true;
  switch (OpArgKind(u_.op())) {
    case ArgKind::None: ok = a.Empty(); break;
    case ArgKind::Const:
      ok = IsBool(u_.dtype())    ? a.Is<bool>()
           : IsFloat(u_.dtype()) ? a.Is<double>()
                                 : a.Is<int64_t>();
      break;
    case ArgKind::Var: ok = a.Is<VarArg>(); break;
    case ArgKind::Param: ok = a.Is<ParamArg>(); break;
    case ArgKind::Range: ok = a.Is<RangeArg>(); break;
    case ArgKind::Axes: ok = a.Is<Axes>(); break;
    case ArgKind::Reduce: ok = a.Is<ReduceArg>(); break;
    case ArgKind::Device: ok = a.Is<DeviceArg>(); break;
    case ArgKind::Collective: ok = a.Is<CollectiveArg>(); break;
  }
  if (!ok)
    return Fail("argument of the wrong kind", "the argument this op carries (see core/ops.h)");
  if (u_.dtype() == DType::kVoid &&
      !(u_.is(Ops::SINK) || u_.is(Ops::STORE) || u_.is(Ops::END) || u_.is(Ops::BARRIER) ||
        u_.is(Ops::MATMUL) || (u_.is(Ops::AFTER) && T(0) == DType::kVoid)))
    return Fail("dtype void", "a value dtype");
  if (std::optional<DType> d = DerivedDType(u_.op(), u_.src()); d && *d != u_.dtype())
    return Fail(absl::StrCat("dtype ", DTypeName(u_.dtype())),
                absl::StrCat("dtype ", DTypeName(*d), " (derived from the sources)"));
  return absl::OkStatus();
}

absl::Status NodeCheck::CheckDTypes() const {
  Ops op = u_.op();
  DType t = u_.dtype();
  auto all_same = [&](size_t from) {
    for (size_t i = from + 1; i < u_.src().size(); ++i)
      if (T(i) != T(from)) return false;
    return true;
  };
  switch (op) {
    case Ops::VAR: {
      const VarArg& v = u_.arg().Get<VarArg>();
      if (t != DType::kI32) return Fail("VAR of another dtype", "i32");
      if (v.name.empty()) return Fail("VAR without a name", "a name");
      if (v.lo > v.hi || v.lo < DTypeMin(t) || v.hi > DTypeMax(t))
        return Fail(absl::StrCat("bounds [", v.lo, ", ", v.hi, "]"), "lo <= hi, both within i32");
      return absl::OkStatus();
    }
    case Ops::BUFFER:
    case Ops::ALLOC: {
      const ParamArg& p = u_.arg().Get<ParamArg>();
      if (p.slot < 0 || p.size < 0)
        return Fail(absl::StrCat("slot ", p.slot, ", size ", p.size), "slot >= 0 and size >= 0");
      return absl::OkStatus();
    }
    case Ops::RANGE:
      if (!IsInt(T(0))) return Fail("a non-integer end", "an integer end");
      return absl::OkStatus();
    case Ops::IOTA:
      if (IsBool(t) || t == DType::kVoid)
        return Fail(absl::StrCat("dtype ", DTypeName(t)), "a number dtype");
      return absl::OkStatus();
    case Ops::INDEX:
      if (!IsIndexable(u_.src(0)))
        return Fail(absl::StrCat("indexing a ", OpName(u_.src(0).op())),
                    "a BUFFER or ALLOC (possibly behind AFTER)");
      if (!IsInt(T(1))) return Fail("a non-integer index", "an integer index");
      return absl::OkStatus();
    case Ops::LOAD:
      if (!u_.src(0).is(Ops::INDEX))
        return Fail(absl::StrCat("loading from a ", OpName(u_.src(0).op())), "an INDEX");
      return absl::OkStatus();
    case Ops::STORE:
      if (!u_.src(0).is(Ops::INDEX))
        return Fail(absl::StrCat("storing to a ", OpName(u_.src(0).op())), "an INDEX");
      if (T(0) != T(1))
        return Fail("storing a value of another dtype",
                    absl::StrCat("a ", DTypeName(T(0)), " value"));
      return absl::OkStatus();
    case Ops::END:
      for (size_t i = 1; i < u_.src().size(); ++i)
        if (!u_.src(i).is(Ops::RANGE))
          return Fail(absl::StrCat("closing a ", OpName(u_.src(i).op())),
                      "RANGEs after the statement");
      return absl::OkStatus();
    case Ops::BARRIER:
      for (const UOp& s : u_.src())
        if (s.dtype() != DType::kVoid)
          return Fail(
              absl::StrCat("waiting for a ", OpName(s.op()), " of dtype ", DTypeName(s.dtype())),
              "statements (dtype void)");
      return absl::OkStatus();
    case Ops::REDUCE: {
      Ops r = u_.arg().Get<ReduceArg>().op;
      if (r != Ops::ADD && r != Ops::MUL && r != Ops::MAX)
        return Fail(absl::StrCat("reduce op ", OpName(r)), "add, mul or max");
      // loop level (rangeify's): REDUCE(x, loops...) with no axes
      for (size_t i = 1; i < u_.src().size(); ++i)
        if (!u_.src(i).is(Ops::RANGE))
          return Fail(absl::StrCat("reducing over a ", OpName(u_.src(i).op())),
                      "the value, then the RANGEs it is reduced over");
      if (u_.src().size() > 1 && !u_.arg().Get<ReduceArg>().axes.empty())
        return Fail("both axes and loops", "axes (tensor level) or loops (loop level)");
      return absl::OkStatus();
    }
    case Ops::ASSIGN:
      if (T(0) != T(1)) return Fail("assigning a value of another dtype", "one dtype");
      return absl::OkStatus();
    case Ops::COPY:
      if (u_.arg().Get<DeviceArg>().name.empty())
        return Fail("a COPY to no device", "the name of its target device");
      return absl::OkStatus();
    case Ops::MATMUL: {  // core/matmul_call.h
      if (t != DType::kVoid) return Fail(absl::StrCat("a matmul call of ", DTypeName(t)), "void");
      if (u_.src().size() != 22) return Fail(absl::StrCat(u_.src().size(), " sources"), "22");
      for (size_t i = 0; i < 22; ++i) {
        const bool buffer = u_.src(i).is(Ops::BUFFER);
        if (i < 3 &&
            (!buffer || (T(i) != DType::kF32 && T(i) != DType::kF16 && T(i) != DType::kBF16)))
          return Fail(absl::StrCat("a matmul call's operand ", i, " ", OpName(u_.src(i).op()),
                                   " of ", DTypeName(T(i))),
                      "a BUFFER of f32, f16 or bf16");
        if (i >= 3 && !IsInt(T(i)))
          return Fail(absl::StrCat("a matmul call's param ", i - 3, " of ", DTypeName(T(i))),
                      "an integer");
      }
      return absl::OkStatus();
    }
    case Ops::COLLECTIVE: {
      const CollectiveArg& c = u_.arg().Get<CollectiveArg>();
      if (c.size < 1 || c.group < 0)
        return Fail(absl::StrCat("a collective over group ", c.group, " of ", c.size, " ranks"),
                    "a group (>= 0) of at least one rank");
      if (c.reduce != Ops::ADD && c.reduce != Ops::MAX)
        return Fail(absl::StrCat("a collective reducing by ", OpName(c.reduce)), "add or max");
      if (IsBool(t)) return Fail("a collective of bool", "a number dtype");
      return absl::OkStatus();
    }
    case Ops::CAST: return absl::OkStatus();
    case Ops::BITCAST:
      if (DTypeSize(t) != DTypeSize(T(0)))
        return Fail("a bitcast between sizes", "dtypes of one size");
      if (IsBool(t) || IsBool(T(0)))
        return Fail("a bitcast of bool (which has no bit layout)", "a CAST");
      return absl::OkStatus();
    case Ops::EXP2:
    case Ops::LOG2:
    case Ops::SIN:
    case Ops::SQRT:
    case Ops::RECIP:
    case Ops::TRUNC:
      if (IsFloatOnly(op) && !IsFloat(T(0))) return Fail("a non-float operand", "a float operand");
      return absl::OkStatus();
    case Ops::WHERE:
      if (!IsBool(T(0))) return Fail("a non-bool condition", "a bool condition");
      if (T(1) != T(2)) return Fail("two values of different dtypes", "one dtype");
      return absl::OkStatus();
    case Ops::ADD:
    case Ops::MUL:
    case Ops::MAX:
    case Ops::FDIV:
    case Ops::FLOORDIV:
    case Ops::MOD:
    case Ops::CMPLT:
    case Ops::CMPNE:
    case Ops::CMPEQ:
    case Ops::AND:
    case Ops::OR:
    case Ops::XOR:
    case Ops::SHL:
    case Ops::SHR:
    case Ops::MULACC: {
      if (!all_same(0)) return Fail("operands of different dtypes", "one dtype");
      DType x = T(0);
      bool ok = x != DType::kVoid;
      const uint32_t g = OpGroups(op);  // (core/ops.h: the dtypes it is defined for)
      if (g & kGroupNoBool) ok &= !IsBool(x);
      if (g & kGroupFloatOnly) ok &= IsFloat(x);
      if (g & kGroupIntOnly) ok &= IsInt(x);
      if (g & kGroupNoFloat) ok &= !IsFloat(x);
      if (!ok) return Fail(absl::StrCat("dtype ", DTypeName(x)), "a dtype this op is defined for");
      if ((op == Ops::FLOORDIV || op == Ops::MOD) && u_.src(1).ConstIntValue() == 0)
        return Fail("division by the constant 0", "a nonzero divisor");
      return absl::OkStatus();
    }
    case Ops::SINK:
    case Ops::CONST:
    case Ops::AFTER:
    case Ops::RESHAPE:
    case Ops::EXPAND:
    case Ops::PERMUTE:
    case Ops::PAD:
    case Ops::SHRINK:
    case Ops::FLIP:
    case Ops::STAGE: return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> NodeCheck::ElementwiseShape() const {
  for (size_t i = 1; i < u_.src().size(); ++i) {
    const Shape &a = S(0), &b = S(i);
    bool same = a.size() == b.size();
    for (size_t d = 0; same && d < a.size(); ++d) same = a[d].ProvablyEquals(b[d]);
    if (!same)
      return Fail("operands of different shapes", "one shape (broadcast with EXPAND first)");
  }
  return u_.src().empty() ? Shape{} : S(0);
}

absl::StatusOr<std::vector<Dim>> NodeCheck::DimSources(size_t from) const {
  std::vector<Dim> dims;
  for (size_t i = from; i < u_.src().size(); ++i) {
    const UOp& d = u_.src(i);
    if (!IsInt(d.dtype()) || !S(i).empty())
      return Fail(absl::StrCat("dimension operand ", i, " is not an integer scalar"),
                  "integer dims");
    if (auto v = d.ConstIntValue(); v && *v < 0)
      return Fail(absl::StrCat("dimension ", *v), "dims >= 0");
    dims.push_back(Dim::FromUOp(d));
  }
  return dims;
}

absl::Status NodeCheck::CheckAxes(const std::vector<int>& axes, size_t rank,
                                  bool permutation) const {
  std::vector<bool> seen(rank, false);
  for (int a : axes) {
    if (a < 0 || a >= static_cast<int>(rank) || seen[a])
      return Fail(
          absl::StrCat("axes (", absl::StrJoin(axes, ", "), ") of a rank-", rank, " operand"),
          permutation ? absl::StrCat("a permutation of 0..", rank, "-1")
                      : absl::StrCat("distinct axes in [0, ", rank, ")"));
    seen[a] = true;
  }
  if (permutation && axes.size() != rank)
    return Fail(absl::StrCat(axes.size(), " axes for a rank-", rank, " operand"),
                absl::StrCat("a permutation of 0..", rank, "-1"));
  return absl::OkStatus();
}

absl::StatusOr<Shape> NodeCheck::MovementShape() const {
  const Shape& in = S(0);
  switch (u_.op()) {
    case Ops::RESHAPE: {
      ASSIGN_OR_RETURN(Shape out, DimSources(1));
      if (!NumElements(in).ProvablyEquals(NumElements(out)))
        return Fail(
            absl::StrCat("reshape to ", ShapeToString(out), " (", NumElements(out).ToString(),
                         " elements) from ", NumElements(in).ToString(), " elements"),
            "the same number of elements");
      return out;
    }
    case Ops::EXPAND: {
      ASSIGN_OR_RETURN(Shape out, DimSources(1));
      bool ok = out.size() == in.size();
      for (size_t d = 0; ok && d < in.size(); ++d)
        ok = in[d].ProvablyEquals(out[d]) || (in[d].IsStatic() && in[d].value() == 1);
      if (!ok)
        return Fail(absl::StrCat("expand to ", ShapeToString(out)),
                    "the same rank, each dim equal or expanded from 1");
      return out;
    }
    case Ops::PAD:
    case Ops::SHRINK: {
      ASSIGN_OR_RETURN(std::vector<Dim> p, DimSources(1));
      if (p.size() != 2 * in.size())
        return Fail(absl::StrCat(p.size(), " bounds"), absl::StrCat("2 per dim: ", 2 * in.size()));
      Shape out;
      for (size_t d = 0; d < in.size(); ++d) {
        const Dim &a = p[2 * d], &b = p[2 * d + 1];
        if (u_.is(Ops::PAD)) {
          out.push_back(Dim::FromUOp(Simplify(in[d].AsUOp() + a.AsUOp() + b.AsUOp())));
          continue;
        }
        bool ok = !(a.IsStatic() && b.IsStatic()) || a.value() <= b.value();
        if (ok && b.IsStatic() && in[d].IsStatic()) ok = b.value() <= in[d].value();
        if (!ok)
          return Fail(absl::StrCat("shrink of dim ", d, " (size ", in[d].ToString(), ") to [",
                                   a.ToString(), ", ", b.ToString(), ")"),
                      "0 <= begin <= end <= size");
        out.push_back(Dim::FromUOp(Simplify(b.AsUOp() - a.AsUOp())));
      }
      return out;
    }
    case Ops::PERMUTE: {
      const std::vector<int>& order = u_.arg().Get<Axes>().v;
      RETURN_IF_ERROR(CheckAxes(order, in.size(), true));
      Shape out;
      for (int a : order) out.push_back(in[a]);
      return out;
    }
    case Ops::FLIP: RETURN_IF_ERROR(CheckAxes(u_.arg().Get<Axes>().v, in.size(), false)); return in;
    case Ops::SINK: case Ops::CONST: case Ops::VAR: case Ops::BUFFER: case Ops::ALLOC:
    case Ops::IOTA: case Ops::RANGE: case Ops::INDEX: case Ops::LOAD: case Ops::STORE: case Ops::END:
    case Ops::BARRIER:
    case Ops::AFTER:
    case Ops::REDUCE:
    case Ops::STAGE:
    case Ops::COPY:
    case Ops::ASSIGN:
    case Ops::COLLECTIVE:
    case Ops::MATMUL: UOPC_FOR_EACH_ALU_OP(UOPC_OP_CASE) return in;
  }
  UOPC_UNREACHABLE("an op");
}

absl::StatusOr<Shape> NodeCheck::Run() {
  RETURN_IF_ERROR(CheckStructure());
  RETURN_IF_ERROR(CheckDTypes());
  switch (u_.op()) {
    case Ops::BUFFER:
    case Ops::ALLOC: return Shape{u_.arg().Get<ParamArg>().size};
    case Ops::IOTA: return DimSources(0);
    case Ops::REDUCE: {
      Shape out = S(0);
      const std::vector<int>& axes = u_.arg().Get<ReduceArg>().axes;
      RETURN_IF_ERROR(CheckAxes(axes, out.size(), false));
      for (int a : axes) out[a] = 1;
      return out;
    }
    case Ops::MATMUL: return Shape{};
    case Ops::COLLECTIVE: {
      const CollectiveArg& c = u_.arg().Get<CollectiveArg>();
      Shape out = S(0);
      if (c.kind == CollectiveKind::kIdentity || c.kind == CollectiveKind::kAllReduce) return out;
      if (out.empty() || !out[0].IsStatic())
        return Fail(
            absl::StrCat("a ", CollectiveKindName(c.kind), " of shape ", ShapeToString(out)),
            "a constant first dim (the ranks' parts lie along it)");
      if (c.kind == CollectiveKind::kAllGather) {
        out[0] = Dim(out[0].value() * c.size);
      } else {
        if (out[0].value() % c.size)
          return Fail(absl::StrCat("a reduce_scatter of shape ", ShapeToString(out), " over ",
                                   c.size, " ranks"),
                      "a first dim that the ranks divide");
        out[0] = Dim(out[0].value() / c.size);
      }
      return out;
    }
    case Ops::AFTER:
    case Ops::STAGE:
    case Ops::COPY:
    case Ops::CAST:
    case Ops::BITCAST: return S(0);
    case Ops::ASSIGN:
    case Ops::SINK: case Ops::CONST: case Ops::VAR: case Ops::RANGE: case Ops::INDEX:
    case Ops::LOAD:
    case Ops::STORE:
    case Ops::END:
    case Ops::BARRIER:
    case Ops::RESHAPE:
    case Ops::EXPAND:
    case Ops::PERMUTE: case Ops::PAD: case Ops::SHRINK: case Ops::FLIP: case Ops::EXP2:
    case Ops::LOG2: case Ops::SIN: case Ops::SQRT: case Ops::RECIP: case Ops::TRUNC:
    case Ops::ADD: case Ops::MUL: case Ops::FDIV: case Ops::FLOORDIV: case Ops::MOD:
    case Ops::MAX: case Ops::CMPLT: case Ops::CMPNE: case Ops::CMPEQ: case Ops::AND:
    case Ops::OR: case Ops::XOR: case Ops::SHL: case Ops::SHR: case Ops::WHERE:
    case Ops::MULACC:
      break;
  }
  if (IsMovement(u_.op())) return MovementShape();
  if (IsAlu(u_.op()) || u_.is(Ops::ASSIGN)) {
    // WHERE's condition and the values share one shape, like every elementwise op
    return ElementwiseShape();
  }
  return Shape{};  // loop level: scalars and statements
}

}  // namespace

absl::StatusOr<ShapeMap> InferShapes(const UOp& root) {
  Shapes shapes;
  for (const UOp& u : root.Toposort()) {
    ASSIGN_OR_RETURN(Shape s, NodeCheck(u, shapes).Run());
    shapes.emplace(u.get(), std::move(s));
  }
  return shapes;
}

absl::StatusOr<Shape> InferShape(const UOp& root) {
  ASSIGN_OR_RETURN(ShapeMap shapes, InferShapes(root));
  return shapes.at(root.get());
}

absl::Status Verify(const UOp& root) { return InferShape(root).status(); }

}  // namespace uopc
