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

// The graph of the tensors to realize, each root in a STAGE on its tensor's device, and
// the buffers it reads by their BUFFER node. A tensor realized since these graphs were built
// appears in them as the expression it was computed by: that expression is replaced by a
// view of its buffer (nothing is recomputed, and what it read may be gone).
absl::StatusOr<UOp> Collect(const std::vector<std::shared_ptr<LazyData>>& todo,
                            absl::flat_hash_map<const UOp::Node*, Buffer>* inputs) {
  absl::flat_hash_map<const UOp::Node*, UOp> realized;
  std::vector<LazyData*> stack;
  absl::flat_hash_map<const LazyData*, bool> seen;
  for (const auto& t : todo) stack.push_back(t.get());
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
  std::vector<UOp> roots;
  for (const auto& t : todo) {
    UOp root =
        realized.empty() ? t->uop : RewriteNodes(t->uop, [&](const UOp& orig, const UOp& rebuilt) {
          auto it = realized.find(orig.get());
          return it == realized.end() ? rebuilt : it->second;
        });
    roots.push_back(UOp::Derived(Ops::STAGE, {root}, DeviceArg{t->device->name()}));
  }
  return UOp::Sink(roots);
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
  ASSIGN_OR_RETURN(g.sink, Collect(todo, &g.inputs));
  CanonicalGraph canonical;
  return FindPlan(g, &canonical);
}

absl::Status Runtime::Realize(const std::vector<std::shared_ptr<LazyData>>& targets) {
  std::vector<std::shared_ptr<LazyData>> todo = Unrealized(targets);
  if (todo.empty()) return absl::OkStatus();
  Graph g;
  ASSIGN_OR_RETURN(g.sink, Collect(todo, &g.inputs));
  CanonicalGraph canonical;
  ASSIGN_OR_RETURN(std::shared_ptr<const uopc::Plan> plan, FindPlan(g, &canonical));
  std::vector<Buffer> inputs;
  for (const UOp& b : canonical.inputs) {
    auto it = g.inputs.find(b.get());
    if (it == g.inputs.end())
      return absl::InternalError("realize: a BUFFER of the graph has no realized tensor");
    inputs.push_back(it->second);
  }
  ASSIGN_OR_RETURN(std::vector<Buffer> outputs, executor_.Run(*plan, inputs));
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

}  // namespace uopc
