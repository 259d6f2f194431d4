// The pass manager: a named pipeline of passes, each a graph in and a graph out, with the
// instrumentation compiler users expect:
//   - time per pass (PassManager::timings),
//   - the verifier after every pass when verification is on (in debug builds, in tests
//     with UOPC_VERIFY=1, or when asked), naming the pass that broke the graph,
//   - UOPC_PRINT_AFTER=name[,name...] prints the graph in UIR after those passes (stderr),
//   - a registry of named passes, so that plugins and integrators can add their own and
//     insert them into a pipeline before or after an existing pass.
// Passes never print; the manager does.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/opt.h"
#include "core/target.h"
#include "core/uop.h"

namespace uopc {

/// What a pass may read besides its graph.
struct PassContext {
  int debug = 0;  // UOPC_DEBUG level
  /// Picks a kernel's optimization actions (core/opt.h) from its space: the kernel built
  /// with the returned list, if it applies, else with the defaults. Unset: the defaults.
  /// (runtime/kernel_search.h times candidates on the device.)
  std::function<std::vector<Opt>(const OptSpace& space)> choose_opts;
  /// The target of a device's kernels, by the device's name ("CPU:0"; the runtime reads it
  /// from the device's plugin); null, or unset, for `default_target`.
  std::function<const Target*(absl::string_view device)> target_of;
  /// The target of kernels on a device target_of does not know, or on none (a graph lowered
  /// without devices, in tests and tools).
  Target default_target = Target::ReferenceCpu();

  /// Whether kernels on `device` reach its backend with their launch mapped by the target's
  /// passes (thread_outer_loop, launch_dims): a plugin of ABI 1.5 or later; null: yes.
  std::function<bool(absl::string_view device)> maps_launch_of;

  /// The target kernels on `device` are compiled for.
  const Target& TargetOf(absl::string_view device) const {
    const Target* t = target_of ? target_of(device) : nullptr;
    return t ? *t : default_target;
  }
  bool MapsLaunch(absl::string_view device) const {
    return !maps_launch_of || maps_launch_of(device);
  }
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual absl::string_view name() const = 0;
  virtual absl::StatusOr<UOp> Run(const UOp& graph, const PassContext& ctx) const = 0;
};

/// A pass from a name and a function.
std::unique_ptr<Pass> MakePass(
    std::string name, std::function<absl::StatusOr<UOp>(const UOp&, const PassContext&)> fn);

/// Named pass factories: the pipeline's own passes and any a plugin registers.
class PassRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Pass>()>;
  static PassRegistry& Get();
  /// Registers `factory` under `name` (replacing an earlier one of that name).
  void Register(const std::string& name, Factory factory);
  /// The registered names, in order of registration.
  std::vector<std::string> Names() const;
  /// A new instance of the pass `name`; NotFound lists the registered names.
  absl::StatusOr<std::unique_ptr<Pass>> Create(const std::string& name) const;

 private:
  std::vector<std::pair<std::string, Factory>> factories_;
};

class PassManager {
 public:
  PassManager() = default;
  explicit PassManager(std::vector<std::unique_ptr<Pass>> passes) : passes_(std::move(passes)) {}

  void Add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  /// Inserts `pass` before (or after) the pass named `anchor`; NotFound if there is none.
  absl::Status InsertBefore(absl::string_view anchor, std::unique_ptr<Pass> pass);
  absl::Status InsertAfter(absl::string_view anchor, std::unique_ptr<Pass> pass);
  std::vector<std::string> names() const;

  /// Runs every pass in order; verifies after each one when `verify` is on.
  absl::StatusOr<UOp> Run(const UOp& graph, const PassContext& ctx = {});

  void set_verify(bool on) { verify_ = on; }
  struct Timing {
    std::string pass;
    std::chrono::nanoseconds total{0};
    int64_t runs = 0;
  };
  const std::vector<Timing>& timings() const { return timings_; }

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<Timing> timings_;
  bool verify_ = DefaultVerify();
  static bool DefaultVerify();
};

}  // namespace uopc
