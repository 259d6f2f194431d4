#include "frontend/realize.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "core/env.h"
#include "core/pattern_matcher.h"
#include "core/status_macros.h"
#include "core/substitute.h"
#include "devices/registry.h"
#include "passes/pipeline.h"
#include "runtime/memory_plan.h"

namespace uopc {

struct Runtime::Graph {
  UOp sink;
  absl::flat_hash_map<const UOp::Node*, Buffer> inputs;
  VarValues vars;                   // the value bound to each VAR the graph reads
  // tensors whose pending writes are roots (after the STAGEs), held: one may be reachable
  // only from what realizing the others lets go
  std::vector<std::shared_ptr<LazyData>> written;
  // the index checks it reaches (one per index and size), each largest a root after the
  // writes, and the tensors that held them
  std::vector<CheckAt> checks;
  std::vector<std::shared_ptr<LazyData>> checked;
};

namespace {

// The ASSIGNs of a chain of pending writes AFTER(AFTER(view, a1), a2)...
void PendingWrites(UOp u, absl::flat_hash_set<const UOp::Node*>* out) {
  while (u.is(Ops::AFTER)) {
    for (size_t i = 1; i < u.src().size(); ++i) out->insert(u.src(i).get());
    u = u.src(0);
  }
}

std::vector<std::shared_ptr<LazyData>> Unrealized(
    const std::vector<std::shared_ptr<LazyData>>& targets) {
  std::vector<std::shared_ptr<LazyData>> todo;
  for (const auto& t : targets)
    if ((!t->buffer || t->base_view) && std::find(todo.begin(), todo.end(), t) == todo.end())
      todo.push_back(t);
  return todo;
}

}  // namespace

// The graph that realizes `todo`: each unrealized tensor in a STAGE on its device, and the
// pending writes of every tensor the graph reaches, each tensor's chain of them a root (its
// buffer is the root's output). A tensor realized since these graphs were built appears in
// them as the expression it was computed by: that expression is replaced by a view of its
// buffer (nothing is recomputed, and what it read may be gone); a write that is done (not
// pending any more) is read as the buffer it wrote.
void Runtime::Collect(const std::vector<std::shared_ptr<LazyData>>& todo, Graph* g) {
  std::shared_ptr<const VarBindings> bound;
  absl::flat_hash_map<const UOp::Node*, UOp> realized;
  absl::flat_hash_set<const UOp::Node*> pending;
  std::vector<std::shared_ptr<LazyData>> stack;
  absl::flat_hash_set<const LazyData*> seen;
  for (const auto& t : todo) stack.push_back(t);
  while (!stack.empty()) {
    std::shared_ptr<LazyData> held = std::move(stack.back());
    LazyData* l = held.get();
    stack.pop_back();
    if (!seen.insert(l).second) continue;
    bound = MergeBindings(bound, l->vars);
    if (l->buffer) {
      UOp b = l->uop;
      while (!b.is(Ops::BUFFER)) b = b.src(0);
      g->inputs[b.get()] = l->buffer;
      const UOp& now = l->base_view ? l->base_view : l->uop;
      if (!(l->forward == now)) realized[l->forward.get()] = now;
    }
    if (l->base_view) {
      PendingWrites(l->uop, &pending);
      g->written.push_back(held);
    }
    for (const auto& s : l->srcs) stack.push_back(s);
    for (const auto& s : l->written_from) stack.push_back(s);
    if (!l->index_checks.empty()) g->checked.push_back(held);
    for (const IndexCheck& c : l->index_checks) {
      if (std::any_of(g->checks.begin(), g->checks.end(), [&](const CheckAt& o) {
            return o.check.largest->uop == c.largest->uop && o.check.size == c.size;
          }))
        continue;
      g->checks.push_back({c, -1});
      stack.push_back(c.largest);
    }
  }
  if (bound)
    for (const auto& [var, value] : *bound) g->vars[var.arg().Get<VarArg>().name] = value;
  std::vector<UOp> roots;
  for (const auto& t : todo)
    if (!t->buffer) roots.push_back(UOp::Derived(Ops::STAGE, {t->uop}, DeviceArg{t->device->name()}));
  for (const auto& w : g->written) roots.push_back(w->uop);
  for (CheckAt& c : g->checks) {
    c.output = static_cast<int>(roots.size());
    const LazyData& l = *c.check.largest;
    roots.push_back(UOp::Derived(Ops::STAGE, {l.uop}, DeviceArg{l.device->name()}));
  }
  g->sink = RewriteNodes(UOp::Sink(roots), [&](const UOp& orig, const UOp& rebuilt) {
    if (auto it = realized.find(orig.get()); it != realized.end()) return it->second;
    if (orig.is(Ops::AFTER) && !pending.contains(orig.src(1).get())) return rebuilt.src(0);
    return rebuilt;
  });
}


Runtime& Runtime::Get() {
  static Runtime* r = new Runtime();
  return *r;
}

namespace {
int DebugLevel() { return static_cast<int>(EnvInt("UOPC_DEBUG", 0, 9, 0)); }
}  // namespace

Runtime::Runtime()
    : debug_(DebugLevel()), executor_(DeviceRegistry::Get(), Executor::Options{DebugLevel()}) {
  if (const char* r = std::getenv("UOPC_RANDOM_OPTS");
      r && (!absl::SimpleAtoi(r, &random_opts_) || random_opts_ == 0))
    std::cerr << "uopc: UOPC_RANDOM_OPTS=" << r << " is not a seed (a positive integer)\n";
  if (const char* t = std::getenv("UOPC_TARGET"); t && *t) {
    absl::StatusOr<Target> target = ParseTarget(t);
    if (target.ok())
      target_ = *std::move(target);
    else
      std::cerr << "uopc: UOPC_TARGET: " << target.status().message()
                << "; kernels are lowered for their devices' targets\n";
  }
  int beam = 0;
  const char* b = std::getenv("UOPC_BEAM");
  if (b && (!absl::SimpleAtoi(b, &beam) || beam < 0)) {
    std::cerr << "uopc: UOPC_BEAM=" << b
              << " is not a beam width (a count of action lists); no search\n";
    beam = 0;  // (a failed parse leaves what it read: "2x" was a width of 2)
  }
  if (beam < 1) return;
  KernelSearch::Options o{.beam = beam, .verbose = debug_ >= 1};
  const char* s = std::getenv("UOPC_BEAM_SECONDS");
  if (s && (!absl::SimpleAtod(s, &o.budget_seconds) || !(o.budget_seconds >= 0))) {
    std::cerr << "uopc: UOPC_BEAM_SECONDS=" << s << " is not a number of seconds; 60\n";
    o.budget_seconds = 60;
  }
  search_ = std::make_unique<KernelSearch>(DeviceRegistry::Get(), o);
}

int Runtime::NewBufferId() {
  static std::atomic<int> next{0};
  return next.fetch_add(1);
}

absl::StatusOr<std::shared_ptr<const Plan>> Runtime::FindPlan(const Graph& g,
                                                          CanonicalGraph* canonical) {
  *canonical = Canonicalize(g.sink);
  size_t before = plans_.size();
  auto start = std::chrono::steady_clock::now();
  const KernelSearch::Stats searched = search_ ? search_->stats() : KernelSearch::Stats{};
  std::string pass_times;  // what each pass took, for UOPC_DEBUG=1
  ASSIGN_OR_RETURN(
      std::shared_ptr<const uopc::Plan> plan, plans_.Get(*canonical, [&](const UOp& sink, int n) {
        PassManager pm = LoweringPipeline();
        PassContext ctx;
        auto device_of = [](absl::string_view device) -> Device* {  // (null: none such)
          DeviceRegistry& r = DeviceRegistry::Get();
          absl::StatusOr<Device*> d = device.empty() ? r.Default() : r.GetDevice(device);
          return d.ok() ? *d : nullptr;
        };
        ctx.target_of = [this, device_of](absl::string_view device) -> const Target* {
          if (target_) return &*target_;
          const Device* d = device_of(device);
          return d ? &d->target() : nullptr;
        };
        ctx.maps_launch_of = [device_of](absl::string_view device) {
          const Device* d = device_of(device);
          return !d || d->TakesMappedLaunch();
        };
        if (search_)
          ctx.choose_opts = [&](const OptSpace& space) { return search_->Choose(space); };
        else if (random_opts_)
          ctx.choose_opts = [&, kernel = uint64_t{0}](const OptSpace& space) mutable {
            return RandomOpts(space, random_opts_ * 1000003 + kernel++);
          };
        absl::StatusOr<Plan> lowered = Lower(sink, n, pm, ctx);
        if (lowered.ok()) ShareTemporaries(&*lowered);
        for (const PassManager::Timing& t : pm.timings())
          absl::StrAppendFormat(&pass_times, "%s%s %.2f ms", pass_times.empty() ? "" : ", ",
                                t.pass, std::chrono::duration<double, std::milli>(t.total).count());
        return lowered;
      }));
  if (search_ && search_->stats().searched != searched.searched) {
    const KernelSearch::Stats now = search_->stats();
    std::cerr << absl::StreamFormat(
        "uopc: UOPC_BEAM searched %d kernels (%d candidates timed) in %.1f s, %d remembered; "
        "%.1f s searching in all\n",
        now.searched - searched.searched, now.timed - searched.timed,
        now.seconds - searched.seconds, now.remembered - searched.remembered, now.seconds);
  }
  if (debug_ >= 1 && plans_.size() != before) {
    std::string text = PlanString(*plan);
    size_t first = text.find('\n');
    std::cerr << "uopc: " << text.substr(0, first) << ", built in "
              << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count()
              << " ms (" << pass_times << ")\n"
              << text.substr(first + 1);
    if (debug_ >= 3) {  // the rewrite rules that fired while lowering it, most first
      std::string fired;
      for (const auto& [rule, n] : TakeRuleCounts())
        absl::StrAppend(&fired, fired.empty() ? "" : ", ", rule, " x", n);
      std::cerr << "uopc: rules fired: " << (fired.empty() ? "none" : fired) << "\n";
    }
  }
  return plan;
}

absl::StatusOr<std::shared_ptr<const Plan>> Runtime::PlanFor(
    const std::vector<std::shared_ptr<LazyData>>& targets) {
  std::vector<std::shared_ptr<LazyData>> todo = Unrealized(targets);
  if (todo.empty()) return std::make_shared<const uopc::Plan>();
  Graph g;
  Collect(todo, &g);
  CanonicalGraph canonical;
  return FindPlan(g, &canonical);
}

absl::StatusOr<std::vector<Buffer>> Runtime::Run(const Graph& g) {
  CanonicalGraph canonical;
  ASSIGN_OR_RETURN(std::shared_ptr<const uopc::Plan> plan, FindPlan(g, &canonical));
  std::vector<Buffer> inputs;
  for (const UOp& b : canonical.inputs) {
    auto it = g.inputs.find(b.get());
    if (it == g.inputs.end())
      return absl::InternalError("realize: a BUFFER of the graph has no realized tensor");
    inputs.push_back(it->second);
  }
  absl::StatusOr<std::vector<Buffer>> outputs = executor_.Run(*plan, inputs, g.vars);
  if (record_ && outputs.ok()) {
    std::vector<CheckAt> checks = g.checks;
    for (CheckAt& c : checks) c.check.largest = nullptr;
    record_->push_back({plan, std::move(inputs), g.vars, std::move(checks), *outputs});
  }
  return outputs;
}

absl::Status Runtime::CheckIndices(const std::vector<CheckAt>& checks,
                                   const std::vector<Buffer>& outputs, const VarValues& vars) {
  std::vector<const IndexCheck*> of;
  std::vector<Buffer> largest;
  std::vector<int64_t> sizes;
  for (const CheckAt& c : checks) {
    of.push_back(&c.check);
    largest.push_back(outputs[c.output]);
    sizes.push_back(c.check.size.Rebound(vars).value());
  }
  return CheckIndexBounds(of, largest, sizes);
}

absl::Status Runtime::Realize(const std::vector<std::shared_ptr<LazyData>>& targets) {
  std::vector<std::shared_ptr<LazyData>> todo = Unrealized(targets);
  if (todo.empty()) return absl::OkStatus();
  Graph g;
  Collect(todo, &g);
  ASSIGN_OR_RETURN(std::vector<Buffer> outputs, Run(g));
  size_t r = 0;
  for (const auto& p : todo) {
    LazyData& t = *p;
    if (t.buffer) continue;  // (its writes are done below)
    t.buffer = outputs[r++];
    t.forward = t.uop;  // the expression, kept: graphs built before refer to it
    t.uop = BufferView(UOp::Buffer(t.dtype, NewBufferId(), t.buffer.count(), t.device->name()),
                       t.shape);
    if (!t.requires_grad) t.srcs.clear();  // the inputs are only kept for backward
  }
  for (const auto& w : g.written) {  // written in place: the buffer again
    w->uop = w->base_view;
    w->base_view = UOp();
    w->written_from.clear();
    w->vars = nullptr;  // the writes' VARs are done with: its own shape's remain
    for (const SymInt& d : w->shape) w->vars = MergeBindings(w->vars, d.bindings());
  }
  for (const auto& t : g.checked) t->index_checks.clear();
  return CheckIndices(g.checks, outputs, g.vars);
}

}  // namespace uopc
