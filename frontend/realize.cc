#include "frontend/realize.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"

#include "core/status_macros.h"
#include "core/substitute.h"
#include "passes/pipeline.h"

namespace uopc {

namespace {

// The graph of the tensors to realize, and the buffers it reads by their BUFFER node. A
// tensor realized since these graphs were built appears in them as the expression it was
// computed by: that expression is replaced by a view of its buffer (nothing is recomputed,
// and what it read may be gone).
struct Graph {
  std::vector<UOp> roots;
  absl::flat_hash_map<const UOp::Node*, Buffer> inputs;
};

absl::StatusOr<Graph> Collect(const std::vector<std::shared_ptr<LazyData>>& todo) {
  Graph gr;
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
      gr.inputs[b.get()] = l->buffer;
      if (!(l->forward == l->uop)) realized[l->forward.get()] = l->uop;
    }
    for (const auto& s : l->srcs) stack.push_back(s.get());
  }
  Device* device = todo[0]->device;
  for (const auto& t : todo) {
    if (t->device != device)
      return absl::UnimplementedError(absl::StrCat("realize: tensors on ", device->name(), " and ",
                                                   t->device->name(),
                                                   " in one call; realize them separately"));
    gr.roots.push_back(
        realized.empty() ? t->uop : RewriteNodes(t->uop, [&](const UOp& orig, const UOp& rebuilt) {
          auto it = realized.find(orig.get());
          return it == realized.end() ? rebuilt : it->second;
        }));
  }
  return gr;
}

std::vector<std::shared_ptr<LazyData>> Unrealized(
    const std::vector<std::shared_ptr<LazyData>>& targets) {
  std::vector<std::shared_ptr<LazyData>> todo;
  for (const auto& t : targets)
    if (!t->buffer && std::find(todo.begin(), todo.end(), t) == todo.end()) todo.push_back(t);
  return todo;
}

}  // namespace

Runtime& Runtime::Get() {
  static Runtime* r = new Runtime();
  return *r;
}

Runtime::Runtime() {
  if (const char* d = std::getenv("UOPC_DEBUG")) debug_ = std::atoi(d);
}

int Runtime::NewBufferId() {
  static std::atomic<int> next{0};
  return next.fetch_add(1);
}

KernelCache& Runtime::KernelsFor(Device* device) {
  auto& e = executors_[device];
  if (!e) e = std::make_unique<KernelCache>(*device);
  return *e;
}

absl::StatusOr<std::shared_ptr<const Plan>> Runtime::PlanFor(
    const std::vector<std::shared_ptr<LazyData>>& targets) {
  std::vector<std::shared_ptr<LazyData>> todo = Unrealized(targets);
  if (todo.empty()) return std::make_shared<const Plan>();
  ASSIGN_OR_RETURN(Graph gr, Collect(todo));
  return plans_.Get(Canonicalize(UOp::Sink(gr.roots)), [](const UOp& sink, int n) {
    PassManager pm = LoweringPipeline();
    return Lower(sink, n, pm);
  });
}

absl::Status Runtime::Realize(const std::vector<std::shared_ptr<LazyData>>& targets) {
  std::vector<std::shared_ptr<LazyData>> todo = Unrealized(targets);
  if (todo.empty()) return absl::OkStatus();
  Device* device = todo[0]->device;
  ASSIGN_OR_RETURN(Graph gr, Collect(todo));
  std::vector<UOp>& roots = gr.roots;
  absl::flat_hash_map<const UOp::Node*, Buffer>& inputs = gr.inputs;
  CanonicalGraph g = Canonicalize(UOp::Sink(roots));
  size_t before = plans_.size();
  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan, plans_.Get(g, [](const UOp& sink, int n) {
    PassManager pm = LoweringPipeline();
    return Lower(sink, n, pm);
  }));
  if (debug_ >= 1 && plans_.size() != before)
    std::cerr << "uopc: plan of " << plan->kernels.size() << " kernels built in "
              << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count()
              << " ms\n";
  // plan buffers: inputs, then fresh outputs and temporaries
  std::vector<Buffer> bufs(plan->buffers.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    auto it = inputs.find(g.inputs[i].get());
    if (it == inputs.end())
      return absl::InternalError("realize: a BUFFER of the graph has no realized tensor");
    bufs[i] = it->second;
  }
  for (size_t i = g.inputs.size(); i < bufs.size(); ++i) {
    const Plan::BufferSpec& s = plan->buffers[i];
    if (s.dtype == DType::kVoid) continue;
    ASSIGN_OR_RETURN(bufs[i], device->Allocate(s.dtype, s.count));
  }
  KernelCache& ex = KernelsFor(device);
  std::vector<KernelLaunch> launches;
  for (const Plan::Kernel& k : plan->kernels) {
    KernelLaunch l{k.ast, {}, {}};
    for (int b : k.buffers) l.buffers.push_back(bufs[b]);
    launches.push_back(std::move(l));
  }
  if (debug_ >= 2) {
    for (const KernelLaunch& l : launches) {
      if (shown_[l.kernel]) continue;
      shown_[l.kernel] = true;
      ASSIGN_OR_RETURN(std::string src, ex.Source(l.kernel));
      std::cerr << "uopc: kernel " << l.kernel.hash() % 100000 << ":\n" << src;
    }
    std::vector<UOp> ks;
    for (const KernelLaunch& l : launches) ks.push_back(l.kernel);
    RETURN_IF_ERROR(ex.Prepare(ks));
    for (const KernelLaunch& l : launches) {
      auto t0 = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(ex.Run({l}));
      RETURN_IF_ERROR(device->Synchronize());
      std::cerr << "uopc: kernel " << l.kernel.hash() % 100000 << " ran in "
                << std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                       .count()
                << " us\n";
    }
  } else {
    RETURN_IF_ERROR(ex.Run(launches));
  }
  for (size_t r = 0; r < todo.size(); ++r) {
    LazyData& t = *todo[r];
    t.buffer = bufs[plan->outputs[r]];
    UOp view = UOp::Buffer(t.dtype, NewBufferId(), t.buffer.count());
    std::vector<UOp> dims{view};
    for (int64_t d : t.shape) dims.push_back(UOp::Int(d));
    t.forward = t.uop;  // the expression, kept: graphs built before refer to it
    t.uop = t.shape.size() == 1 ? view : UOp::Derived(Ops::RESHAPE, dims);
    if (!t.requires_grad) t.srcs.clear();  // the inputs are only kept for backward
  }
  return absl::OkStatus();
}

}  // namespace uopc
