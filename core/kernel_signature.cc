#include "core/kernel_signature.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

#include "core/alu.h"
#include "core/bounds.h"

namespace uopc {

LaunchDims LaunchDimsOf(const UOp& sink) {
  LaunchDims d;
  for (const UOp& u : sink.Toposort()) {
    if (!u.is(Ops::RANGE)) continue;
    const RangeKind k = u.arg().Get<RangeArg>().kind;
    if (k != RangeKind::kGlobal && k != RangeKind::kLocal) continue;
    const int64_t n = std::clamp<int64_t>(VMax(u.src(0)), 1, UINT32_MAX);
    (k == RangeKind::kGlobal ? d.global : d.local)[0] = static_cast<uint32_t>(n);
  }
  return d;
}

std::optional<int64_t> EvalIndex(const UOp& expr,
                                 const absl::flat_hash_map<std::string, int64_t>& vars) {
  // (most launch params are constants: a matmul call's 19 were a tenth of a batched decode
  // step's host time, each a sort and a map)
  if (expr.is(Ops::CONST))
    if (const int64_t* i = expr.arg().TryGet<int64_t>()) return *i;
  absl::flat_hash_map<const UOp::Node*, Arg> value;
  for (const UOp& u : expr.Toposort()) {
    Arg v;
    if (u.is(Ops::CONST)) {
      v = u.arg();
    } else if (u.is(Ops::VAR)) {
      auto it = vars.find(u.arg().Get<VarArg>().name);
      if (it == vars.end()) return std::nullopt;
      v = it->second;
    } else if (IsAlu(u.op())) {
      absl::InlinedVector<Arg, 3> in;
      for (const UOp& s : u.src()) in.push_back(value.at(s.get()));
      std::optional<Arg> r =
          EvalAlu(u.op(), (u.is(Ops::WHERE) ? u.src(1) : u.src(0)).dtype(), u.dtype(), in);
      if (!r) return std::nullopt;
      v = *r;
    } else {
      return std::nullopt;
    }
    value[u.get()] = std::move(v);
  }
  const Arg& r = value.at(expr.get());
  if (const int64_t* i = r.TryGet<int64_t>()) return *i;
  return std::nullopt;
}

absl::StatusOr<KernelSignature> SignatureOf(const UOp& sink) {
  KernelSignature sig;
  for (const UOp& u : sink.Toposort()) {
    if (u.is(Ops::BUFFER)) {
      const ParamArg& p = u.arg().Get<ParamArg>();
      if (p.slot >= static_cast<int>(sig.buffers.size())) sig.buffers.resize(p.slot + 1);
      KernelSignature::Buffer& b = sig.buffers[p.slot];
      if (b.used && (b.dtype != u.dtype() || b.size != p.size))
        return absl::InvalidArgumentError(absl::StrCat(
            "kernel signature: buffer slot ", p.slot, " is declared as ", b.size, " x ",
            DTypeName(b.dtype), " and as ", p.size, " x ", DTypeName(u.dtype())));
      b.used = true, b.dtype = u.dtype(), b.size = p.size;
    } else if (u.is(Ops::STORE)) {
      const UOp& at = u.src(0);
      if (at.is(Ops::INDEX) && at.src(0).is(Ops::BUFFER)) {
        sig.buffers[at.src(0).arg().Get<ParamArg>().slot].written = true;
      } else {
        for (const UOp& v : at.Toposort())
          if (v.is(Ops::BUFFER)) sig.buffers[v.arg().Get<ParamArg>().slot].written = true;
      }
    } else if (u.is(Ops::VAR)) {
      const VarArg& v = u.arg().Get<VarArg>();
      auto it = std::find_if(sig.vars.begin(), sig.vars.end(),
                             [&](const VarArg& o) { return o.name == v.name; });
      if (it == sig.vars.end()) {
        sig.vars.push_back(v);
      } else if (!(*it == v)) {
        return absl::InvalidArgumentError(absl::StrCat("kernel signature: VAR ", v.name,
                                                       " is declared with bounds [", it->lo, ", ",
                                                       it->hi, "] and [", v.lo, ", ", v.hi, "]"));
      }
    }
  }
  std::sort(sig.vars.begin(), sig.vars.end(),
            [](const VarArg& a, const VarArg& b) { return a.name < b.name; });
  return sig;
}

}  // namespace uopc
