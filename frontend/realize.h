// The runtime behind Tensor::Realize: collects the graph of the tensors to realize (on any
// devices), looks its plan up in the plan cache (lowering it with the pipeline the first
// time its structure is seen), runs the plan with the Executor, and makes each tensor a
// view of its buffer. UOPC_DEBUG=1 prints each plan built, with its steps, their devices
// and bytes; UOPC_DEBUG=2 also each kernel's source and each step's time.
// UOPC_BEAM=N searches each reducing kernel's optimization actions (a beam of N action
// lists, timed on the kernel's device) while a plan is built, and keeps the fastest,
// remembered on disk for later runs (runtime/kernel_search.h); a line on stderr says what
// the search took. It stops for the run after UOPC_BEAM_SECONDS (default 60) of searching.
// UOPC_RANDOM_OPTS=SEED (for tests) builds each kernel with a random list of actions instead,
// which must give the bits of the defaults.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"

#include "core/target.h"
#include "frontend/tensor.h"
#include "runtime/executor.h"
#include "runtime/kernel_search.h"
#include "runtime/plan_cache.h"

namespace uopc {

class Runtime {
 public:
  static Runtime& Get();

  /// Realizes every unrealized tensor of `targets` with one plan, which also applies the
  /// pending in-place writes (Tensor::Assign on a view) of every tensor it reaches, and of
  /// the targets, and checks the indices that it reads by: OUT_OF_RANGE, with everything
  /// realized, when one is outside its dim (what it read there is 0, what it wrote dropped).
  absl::Status Realize(const std::vector<std::shared_ptr<LazyData>>& targets);
  /// The plan that realizing `targets` would run (built or from the cache), without running it.
  absl::StatusOr<std::shared_ptr<const Plan>> PlanFor(
      const std::vector<std::shared_ptr<LazyData>>& targets);

  PlanCache& plans() { return plans_; }
  Executor& executor() { return executor_; }
  /// What every kernel is lowered for, whatever device runs it (UOPC_TARGET, a target's
  /// text form: core/target.h); unset: each device's own target.
  const std::optional<Target>& target_override() const { return target_; }
  /// The kernel search (with UOPC_BEAM; else null).
  KernelSearch* search() { return search_.get(); }

  /// An index check of a plan (frontend/index_check.h): the root that computes it.
  struct CheckAt {
    IndexCheck check;  // (in a recorded run, its `largest` is not held)
    int output;
  };
  /// A run of a plan as Realize made it: the plan, the buffers bound to its inputs, the
  /// VAR values, its index checks (what frontend/captured_step.h runs and checks again),
  /// and the buffers it made.
  struct PlanRun {
    std::shared_ptr<const Plan> plan;
    std::vector<Buffer> inputs;
    VarValues vars;
    std::vector<CheckAt> checks;
    std::vector<Buffer> outputs;
  };
  /// OK when every check of a run passes: the first failure otherwise.
  static absl::Status CheckIndices(const std::vector<CheckAt>& checks,
                                   const std::vector<Buffer>& outputs, const VarValues& vars);
  /// While on, every run is appended to `runs` (off: nothing is kept).
  void Record(std::vector<PlanRun>* runs) { record_ = runs; }
  /// A fresh id for a BUFFER node.
  static int NewBufferId();

 private:
  Runtime();
  struct Graph;
  /// The graph that realizes `todo` (and applies the pending writes it reaches).
  static void Collect(const std::vector<std::shared_ptr<LazyData>>& todo, Graph* g);
  /// The plan of `g` (from the cache, or built and printed at UOPC_DEBUG=1).
  absl::StatusOr<std::shared_ptr<const Plan>> FindPlan(const Graph& g, CanonicalGraph* canonical);
  /// Finds the plan of `g` and runs it: the buffer of each root.
  absl::StatusOr<std::vector<Buffer>> Run(const Graph& g);

  PlanCache plans_;
  int debug_ = 0;
  std::vector<PlanRun>* record_ = nullptr;
  Executor executor_;
  std::unique_ptr<KernelSearch> search_;  // with UOPC_BEAM
  uint64_t random_opts_ = 0;              // UOPC_RANDOM_OPTS's seed; 0: none
  std::optional<Target> target_;          // UOPC_TARGET: every kernel lowered for it
};

}  // namespace uopc
