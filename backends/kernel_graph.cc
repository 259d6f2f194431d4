#include "backends/kernel_graph.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "core/dtype.h"
#include "core/ops.h"

namespace uopc {
namespace {

absl::StatusOr<Arg> ArgOf(const uopc_kernel_node& n, DType dtype) {
  switch (n.arg) {
    case UOPC_KERNEL_ARG_NONE: return Arg();
    case UOPC_KERNEL_ARG_CONST:
      if (IsFloat(dtype)) return Arg(n.f);
      if (IsBool(dtype)) return Arg(n.i != 0);
      return Arg(static_cast<int64_t>(n.i));
    case UOPC_KERNEL_ARG_VAR: return Arg(VarArg{n.name ? n.name : "", n.lo, n.hi});
    case UOPC_KERNEL_ARG_PARAM:
      return Arg(ParamArg{static_cast<int>(n.i), n.size, n.name ? n.name : ""});
    case UOPC_KERNEL_ARG_RANGE: {
      RangeKind kind;
      if (!n.name || !ParseRangeKind(n.name, &kind))
        return absl::InvalidArgumentError(
            absl::StrCat("kernel form: a range of kind '", n.name ? n.name : "(NULL)", "'"));
      return Arg(RangeArg{static_cast<int>(n.i), kind});
    }
    case UOPC_KERNEL_ARG_FORCE_I32: break;
  }
  return absl::InvalidArgumentError(absl::StrCat("kernel form: argument kind ", n.arg));
}

}  // namespace

absl::StatusOr<UOp> GraphOfForm(const uopc_kernel_form& form) {
  if (form.num_nodes == 0) return absl::InvalidArgumentError("kernel form: no nodes");
  std::vector<UOp> nodes;
  nodes.reserve(form.num_nodes);
  for (uint32_t k = 0; k < form.num_nodes; ++k) {
    const uopc_kernel_node& n = form.nodes[k];
    std::optional<Ops> op = n.op ? ParseOp(n.op) : std::nullopt;
    if (!op || n.dtype < 0 || n.dtype >= kNumDTypes)
      return absl::InvalidArgumentError(absl::StrCat("kernel form: node ", k, " has op '",
                                                     n.op ? n.op : "(NULL)", "', dtype ",
                                                     static_cast<int>(n.dtype)));
    const DType dtype = static_cast<DType>(n.dtype);
    std::vector<UOp> src;
    for (uint32_t s = 0; s < n.num_src; ++s) {
      if (n.src[s] >= k)
        return absl::InvalidArgumentError(
            absl::StrCat("kernel form: node ", k, "'s source ", s, " is not an earlier node"));
      src.push_back(nodes[n.src[s]]);
    }
    absl::StatusOr<Arg> arg = ArgOf(n, dtype);
    if (!arg.ok()) return arg.status();
    nodes.push_back(UOp::Make(*op, dtype, src, *std::move(arg)));
  }
  return nodes.back();
}

absl::StatusOr<UOp> ReadKernel(const void* kernel, uint64_t size) {
  char why[1024] = "";
  std::unique_ptr<uopc_kernel_form, void (*)(uopc_kernel_form*)> form(
      uopc_kernel_form_read(kernel, size, why, sizeof why), uopc_kernel_form_free);
  if (!form) return absl::InvalidArgumentError(why);
  return GraphOfForm(*form);
}

}  // namespace uopc
