// Executor: runs a Plan across devices. Buffers are allocated on their devices; each step
// is queued, in plan order, on its device's in-order queue, and waits (through events)
// only for the steps of other devices whose buffers it reads or overwrites, so a copy on
// one device overlaps a kernel on another. A copy between two devices of one plugin is the
// plugin's own copy; between plugins it is staged through host memory. A run synchronizes
// once, at its end.
//
// A step that fails stops the run: the devices it used are synchronized before the error
// returns (no queued work outlives the buffers it uses), the error names the step and its
// device, and the other devices are left working.
//
// Debug output (Options::debug, UOPC_DEBUG): at 2, steps run one at a time, each printed
// with its time, and each kernel's source is printed the first time it runs.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "devices/kernel_cache.h"
#include "devices/registry.h"
#include "runtime/plan.h"

namespace uopc {

class Executor {
 public:
  struct Options {
    int debug = 0;               // UOPC_DEBUG level
    std::ostream* log = nullptr; // where debug lines go (null: stderr)
  };
  explicit Executor(const DeviceRegistry& registry) : Executor(registry, Options()) {}
  Executor(const DeviceRegistry& registry, Options options);

  /// Runs `plan` with `inputs` bound to its input buffers (in order) and VAR values `vars`;
  /// returns the buffer of each root (Plan::outputs), with its data in place.
  absl::StatusOr<std::vector<Buffer>> Run(const Plan& plan, absl::Span<const Buffer> inputs,
                                          const VarValues& vars = {});
  /// The kernels compiled for `device`.
  KernelCache& KernelsFor(Device* device);

  struct Stats {
    int64_t plans = 0, kernels = 0, copies = 0, staged_copies = 0;
    uint64_t bytes_copied = 0;
  };
  Stats stats();

 private:
  friend class PlanRun;
  const DeviceRegistry& registry_;
  Options options_;
  std::mutex mu_;
  absl::flat_hash_map<Device*, std::unique_ptr<KernelCache>> kernels_;
  absl::flat_hash_set<UOp> shown_;  // kernels whose source was printed
  Stats stats_;
};

}  // namespace uopc
