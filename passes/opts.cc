#include "passes/opts.h"

#include "absl/strings/str_cat.h"

#include "passes/cpu_opts.h"
#include "passes/gpu_opts.h"

namespace uopc {
std::vector<Opt> DefaultOpts(const KernelLoops& k, const Target& t) {
  return t.IsGpu() ? GpuDefaultOpts(k, t) : CpuDefaultOpts(k, t);
}

std::vector<Opt> OptActions(const KernelLoops& k, const Target& t) {
  return t.IsGpu() ? GpuOptActions(k, t) : CpuOptActions(k, t);
}

absl::StatusOr<LoopSplits> SplitsOf(const KernelLoops& k, const std::vector<Opt>& opts,
                                    const Target& t) {
  const int last = static_cast<int>(k.outputs.size()) - 1;
  auto refuse = [&](const Opt& o, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("schedule_opts: opt \"", OptsToString({o}),
                                                   "\" does not apply to a kernel of shape ",
                                                   k.shape, ": ", why));
  };
  auto refuse_all = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule_opts: opts \"", OptsToString(opts), "\" ", why));
  };
  // [0]: the rows' (the loop before the last), [1]: the columns' (the last loop)
  std::optional<int64_t> upcast[2], group[2];
  LoopSplits s;
  for (const Opt& o : opts) {
    if (!k.reduces) return refuse(o, "it computes no reduction");
    if (o.op == OptOp::kUnroll) {
      if (o.axis >= static_cast<int>(k.reduction.size()) || !k.reduction[o.axis] || o.amount < 2 ||
          *k.reduction[o.axis] % o.amount != 0)
        return refuse(o, "expected a reduction loop of a constant length that AMOUNT divides");
      s.unrolls.push_back(o);
      continue;
    }
    if (t.IsGpu()) return refuse(o, "a GPU kernel computes one output a thread (unrolls only)");
    if (o.axis < last - 1 || o.axis > last || !k.outputs[o.axis] || o.amount < 2 ||
        *k.outputs[o.axis] % o.amount != 0)
      return refuse(o,
                    "expected one of the last two output loops, of a constant length that "
                    "AMOUNT (2 or more) divides");
    std::optional<int64_t>& slot = (o.op == OptOp::kUpcast ? upcast : group)[o.axis == last];
    if (slot) return refuse(o, "that loop has an action of that kind already");
    slot = o.amount;
  }
  if ((upcast[0] || upcast[1]) && (group[0] || group[1]))
    return refuse_all("both upcast and group a kernel's sums");
  if ((upcast[0] && !upcast[1]) || (group[0] && !group[1]))
    return refuse_all("tile rows without tiling the columns");
  if (upcast[1] && *upcast[1] * upcast[0].value_or(1) > CpuMaxRegisterTile(t))
    return refuse_all(absl::StrCat("hold more than ", CpuMaxRegisterTile(t), " sums in registers"));
  if (group[1] && *group[1] > CpuMaxGroupColumns(t))
    return refuse_all(absl::StrCat("group more than ", CpuMaxGroupColumns(t), " columns"));
  s.registers = upcast[1].has_value();
  s.rows = (s.registers ? upcast : group)[0].value_or(0);
  s.columns = (s.registers ? upcast : group)[1].value_or(0);
  return s;
}

}  // namespace uopc
