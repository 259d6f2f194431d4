#include "frontend/realize.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"

#include "core/status_macros.h"
#include "core/substitute.h"
#include "devices/registry.h"
#include "passes/pipeline.h"

namespace uopc {

namespace {

// The graph of `roots`, built over the tensors `from` (and what they were computed from),
// and the buffers it reads by their BUFFER node. A tensor realized since these graphs were
// built appears in them as the expression it was computed by: that expression is replaced
// by a view of its buffer (nothing is recomputed, and what it read may be gone).
UOp Collect(const std::vector<LazyData*>& from, const std::vector<UOp>& roots,
            absl::flat_hash_map<const UOp::Node*, Buffer>* inputs) {
  absl::flat_hash_map<const UOp::Node*, UOp> realized;
  std::vector<LazyData*> stack = from;
  absl::flat_hash_map<const LazyData*, bool> seen;
  while (!stack.empty()) {
    LazyData* l = stack.back();
    stack.pop_back();
    if (seen[l]) continue;
    seen[l] = true;
    if (l->buffer) {
      UOp b = l->uop;
      while (!b.is(Ops::BUFFER)) b = b.src(0);
      (*inputs)[b.get()] = l->buffer;
      if (!(l->forward == l->uop)) realized[l->forward.get()] = l->uop;
    }
    for (const auto& s : l->srcs) stack.push_back(s.get());
  }
  std::vector<UOp> out;
  for (const UOp& r : roots)
    out.push_back(realized.empty() ? r : RewriteNodes(r, [&](const UOp& orig, const UOp& rebuilt) {
      auto it = realized.find(orig.get());
      return it == realized.end() ? rebuilt : it->second;
    }));
  return UOp::Sink(out);
}

// The tensors to realize, each in a STAGE on its tensor's device.
UOp CollectStaged(const std::vector<std::shared_ptr<LazyData>>& todo,
                  absl::flat_hash_map<const UOp::Node*, Buffer>* inputs) {
  std::vector<LazyData*> from;
  std::vector<UOp> roots;
  for (const auto& t : todo) {
    from.push_back(t.get());
    roots.push_back(UOp::Derived(Ops::STAGE, {t->uop}, DeviceArg{t->device->name()}));
  }
  return Collect(from, roots, inputs);
}

std::vector<std::shared_ptr<LazyData>> Unrealized(
    const std::vector<std::shared_ptr<LazyData>>& targets) {
  std::vector<std::shared_ptr<LazyData>> todo;
  for (const auto& t : targets)
    if (!t->buffer && std::find(todo.begin(), todo.end(), t) == todo.end()) todo.push_back(t);
  return todo;
}

}  // namespace

struct Runtime::Graph {
  UOp sink;
  absl::flat_hash_map<const UOp::Node*, Buffer> inputs;
};

Runtime& Runtime::Get() {
  static Runtime* r = new Runtime();
  return *r;
}

namespace {
int DebugLevel() {
  const char* d = std::getenv("UOPC_DEBUG");
  return d ? std::atoi(d) : 0;
}
}  // namespace

Runtime::Runtime()
    : debug_(DebugLevel()), executor_(DeviceRegistry::Get(), Executor::Options{DebugLevel()}) {}

int Runtime::NewBufferId() {
  static std::atomic<int> next{0};
  return next.fetch_add(1);
}

absl::StatusOr<std::shared_ptr<const Plan>> Runtime::FindPlan(const Graph& g,
                                                          CanonicalGraph* canonical) {
  *canonical = Canonicalize(g.sink);
  size_t before = plans_.size();
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::shared_ptr<const uopc::Plan> plan,
                   plans_.Get(*canonical, [](const UOp& sink, int n) {
                     PassManager pm = LoweringPipeline();
                     return Lower(sink, n, pm);
                   }));
  if (debug_ >= 1 && plans_.size() != before) {
    std::string text = PlanString(*plan);
    size_t first = text.find('\n');
    std::cerr << "uopc: " << text.substr(0, first) << ", built in "
              << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count()
              << " ms\n"
              << text.substr(first + 1);
  }
  return plan;
}

absl::StatusOr<std::shared_ptr<const Plan>> Runtime::PlanFor(
    const std::vector<std::shared_ptr<LazyData>>& targets) {
  std::vector<std::shared_ptr<LazyData>> todo = Unrealized(targets);
  if (todo.empty()) return std::make_shared<const uopc::Plan>();
  Graph g;
  g.sink = CollectStaged(todo, &g.inputs);
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
  return executor_.Run(*plan, inputs);
}

absl::Status Runtime::Realize(const std::vector<std::shared_ptr<LazyData>>& targets) {
  std::vector<std::shared_ptr<LazyData>> todo = Unrealized(targets);
  if (todo.empty()) return absl::OkStatus();
  Graph g;
  g.sink = CollectStaged(todo, &g.inputs);
  ASSIGN_OR_RETURN(std::vector<Buffer> outputs, Run(g));
  for (size_t r = 0; r < todo.size(); ++r) {
    LazyData& t = *todo[r];
    t.buffer = outputs[r];
    UOp view = UOp::Buffer(t.dtype, NewBufferId(), t.buffer.count(), t.device->name());
    std::vector<UOp> dims{view};
    for (int64_t d : t.shape) dims.push_back(UOp::Int(d));
    t.forward = t.uop;  // the expression, kept: graphs built before refer to it
    t.uop = t.shape.size() == 1 ? view : UOp::Derived(Ops::RESHAPE, dims);
    if (!t.requires_grad) t.srcs.clear();  // the inputs are only kept for backward
  }
  return absl::OkStatus();
}

absl::Status Runtime::Assign(const std::shared_ptr<LazyData>& target,
                             const std::shared_ptr<LazyData>& value) {
  Graph g;
  g.sink = Collect({target.get(), value.get()},
                   {UOp::Derived(Ops::ASSIGN, {target->uop, value->uop})}, &g.inputs);
  return Run(g).status();
}

}  // namespace uopc
