#include "runtime/plan.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "core/status_macros.h"
#include "core/substitute.h"

namespace uopc {
namespace {

int SlotOf(const UOp& buffer) { return buffer.arg().Get<ParamArg>().slot; }

// A kernel step: its buffers renumbered 0..n-1 in slot order, without their devices; it
// runs where its buffers are (all on one device).
absl::StatusOr<Plan::Step> KernelStep(const UOp& k) {
  std::vector<int> slots, writes;
  std::string device;
  for (const UOp& u : k.Toposort()) {
    if (u.is(Ops::BUFFER)) {
      slots.push_back(SlotOf(u));
      const std::string& d = u.arg().Get<ParamArg>().device;
      if (!d.empty() && !device.empty() && d != device)
        return absl::InternalError(absl::StrCat("plan: a kernel reads buffers of ", device,
                                                " and ", d, "; kernelize places each on one"));
      if (!d.empty()) device = d;
    }
    if (u.is(Ops::STORE) && u.src(0).src(0).is(Ops::BUFFER))
      writes.push_back(SlotOf(u.src(0).src(0)));
  }
  if (k.is(Ops::MATMUL)) writes.push_back(SlotOf(k.src(0)));  // a supplied kernel's call
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  std::sort(writes.begin(), writes.end());
  writes.erase(std::unique(writes.begin(), writes.end()), writes.end());
  absl::flat_hash_map<int, int> local;
  for (size_t i = 0; i < slots.size(); ++i) local[slots[i]] = static_cast<int>(i);
  UOp ast = RewriteNodes(k, [&](const UOp&, const UOp& u) {
    if (!u.is(Ops::BUFFER)) return u;
    return UOp::Buffer(u.dtype(), local.at(SlotOf(u)), u.arg().Get<ParamArg>().size);
  });
  return Plan::Step{Plan::Kernel{ast, slots, writes}, device};
}

// A copy step, from ASSIGN(BUFFER dst, COPY(BUFFER src)).
absl::StatusOr<Plan::Step> CopyStep(const UOp& a) {
  const UOp &dst = a.src(0), &copy = a.src(1);
  if (!dst.is(Ops::BUFFER) || !copy.is(Ops::COPY) || !copy.src(0).is(Ops::BUFFER))
    return absl::InvalidArgumentError(
        "plan: expected a copy step ASSIGN(BUFFER, COPY(BUFFER)) from rangeify");
  const ParamArg &d = dst.arg().Get<ParamArg>(), &s = copy.src(0).arg().Get<ParamArg>();
  uint64_t bytes = static_cast<uint64_t>(std::min(d.size, s.size)) * DTypeSize(dst.dtype());
  return Plan::Step{Plan::Copy{s.slot, d.slot, 0, 0, bytes}, d.device};
}

// A collective step, from ASSIGN(BUFFER dst, COLLECTIVE(BUFFER src)).
absl::StatusOr<Plan::Step> CollectiveStep(const UOp& a) {
  const UOp &dst = a.src(0), &c = a.src(1);
  if (!dst.is(Ops::BUFFER) || !c.src(0).is(Ops::BUFFER))
    return absl::InvalidArgumentError(
        "plan: expected a collective step ASSIGN(BUFFER, COLLECTIVE(BUFFER)) from rangeify");
  const ParamArg &d = dst.arg().Get<ParamArg>(), &s = c.src(0).arg().Get<ParamArg>();
  return Plan::Step{Plan::Collective{c.arg().Get<CollectiveArg>(), s.slot, d.slot, s.size},
                    d.device};
}

absl::StatusOr<Plan::Step> StepOf(const UOp& step) {
  if (!step.is(Ops::ASSIGN)) return KernelStep(step);
  return step.src(1).is(Ops::COLLECTIVE) ? CollectiveStep(step) : CopyStep(step);
}

}  // namespace

std::vector<const Plan::Kernel*> Plan::kernels() const {
  std::vector<const Kernel*> out;
  for (const Step& s : steps)
    if (const auto* k = std::get_if<Kernel>(&s.op)) out.push_back(k);
  return out;
}

std::vector<const Plan::Copy*> Plan::copies() const {
  std::vector<const Copy*> out;
  for (const Step& s : steps)
    if (const auto* c = std::get_if<Copy>(&s.op)) out.push_back(c);
  return out;
}

absl::StatusOr<Plan> ExtractPlan(const UOp& lowered, int num_inputs) {
  if (!lowered.is(Ops::SINK) || lowered.src().size() != 2 || !lowered.src(0).is(Ops::SINK) ||
      !lowered.src(1).is(Ops::SINK))
    return absl::InvalidArgumentError(
        "plan: expected SINK(SINK(steps...), SINK(outputs...)) from rangeify");
  Plan plan;
  plan.num_inputs = num_inputs;
  auto spec = [&](const UOp& b) {
    const ParamArg& p = b.arg().Get<ParamArg>();
    if (p.slot >= static_cast<int>(plan.buffers.size())) plan.buffers.resize(p.slot + 1);
    Plan::BufferSpec& s = plan.buffers[p.slot];
    if (s.dtype == DType::kVoid)
      s = {b.dtype(), p.size, p.device, p.slot < num_inputs ? Plan::Role::kInput : Plan::Role::kTemp};
  };
  std::vector<VarArg> vars;
  for (const UOp& step : lowered.src(0).src()) {
    for (const UOp& u : step.Toposort()) {
      if (u.is(Ops::BUFFER)) spec(u);
      if (u.is(Ops::VAR)) vars.push_back(u.arg().Get<VarArg>());
    }
    ASSIGN_OR_RETURN(Plan::Step s, StepOf(step));
    plan.steps.push_back(std::move(s));
  }
  for (const UOp& b : lowered.src(1).src()) {
    spec(b);
    int slot = SlotOf(b);
    if (slot >= num_inputs) plan.buffers[slot].role = Plan::Role::kOutput;
    plan.outputs.push_back(slot);
  }
  std::sort(vars.begin(), vars.end(),
            [](const VarArg& a, const VarArg& b) { return a.name < b.name; });
  vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
  plan.vars = std::move(vars);
  return plan;
}

absl::StatusOr<Plan> Lower(const UOp& canonical_sink, int num_inputs, PassManager& pipeline,
                           const PassContext& ctx) {
  ASSIGN_OR_RETURN(UOp lowered, pipeline.Run(canonical_sink, ctx));
  return ExtractPlan(lowered, num_inputs);
}

std::string ByteString(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  if (bytes < (1u << 20)) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  if (bytes < (1u << 30)) return absl::StrFormat("%.1f MiB", bytes / 1048576.0);
  return absl::StrFormat("%.2f GiB", bytes / 1073741824.0);
}

uint64_t Plan::OwnBytes() const {
  uint64_t total = 0;
  for (const Arena& a : arenas) total += a.bytes;
  for (size_t b = num_inputs; b < buffers.size(); ++b)
    if (b >= arena_of.size() || arena_of[b] < 0) total += buffers[b].bytes();
  return total;
}

std::string PlanString(const Plan& plan) {
  int kernels = 0, copies = 0;
  uint64_t total = 0;
  for (const Plan::BufferSpec& b : plan.buffers) total += b.bytes();
  for (const Plan::Step& s : plan.steps) {
    kernels += std::holds_alternative<Plan::Kernel>(s.op);
    copies += std::holds_alternative<Plan::Copy>(s.op);
  }
  const size_t collectives = plan.steps.size() - kernels - copies;
  std::string out =
      absl::StrCat("plan of ", plan.steps.size(), " steps (", kernels, " kernels, ", copies,
                   " copies", collectives ? absl::StrCat(", ", collectives, " collectives") : "",
                   "), ", plan.buffers.size(), " buffers (", ByteString(total),
                   plan.arenas.empty()
                       ? std::string()
                       : absl::StrCat("; it allocates ", ByteString(plan.OwnBytes()),
                                      ", its temporaries sharing ", plan.arenas.size(), " arenas"),
                   ")\n");
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Plan::Step& s = plan.steps[i];
    if (const auto* k = std::get_if<Plan::Kernel>(&s.op)) {
      uint64_t written = 0;
      for (int w : k->writes) written += plan.buffers[w].bytes();
      absl::StrAppendFormat(&out, "  %2d kernel %05d on %s  %d buffers, writes %s\n", i,
                            k->ast.hash() % 100000, s.device, k->buffers.size(),
                            ByteString(written));
    } else if (const auto* c = std::get_if<Plan::Copy>(&s.op)) {
      absl::StrAppendFormat(&out, "  %2d copy   %s -> %s  %s\n", i, plan.buffers[c->src].device,
                            plan.buffers[c->dst].device, ByteString(c->bytes));
    } else {
      const auto& col = std::get<Plan::Collective>(s.op);
      absl::StrAppendFormat(&out, "  %2d %s on %s  group %d of %d  %s\n", i,
                            CollectiveKindName(col.arg.kind), s.device, col.arg.group, col.arg.size,
                            ByteString(plan.buffers[col.src].bytes()));
    }
  }
  return out;
}

}  // namespace uopc
