#include "core/kernel_signature.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

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
      b = {true, u.dtype(), p.size};
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
