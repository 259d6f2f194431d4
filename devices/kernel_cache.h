// KernelCache: the kernels compiled for one device, and their launches. A kernel (a SINK of
// loop IR) is rendered and compiled by the device's backend the first time it is seen; the
// kernels missing from the cache are compiled together, in one backend compile call (for
// the C backend: one gcc run, one shared object). Every launch checks its bindings first:
// a buffer per used slot, on this device, of the right dtype and size, and every VAR
// within its declared bounds (the guard that makes one compiled kernel safe for every
// bound value). A MATMUL call (core/matmul_call.h) compiles nothing: it launches the
// kernel the device's plugin supplies, once its params are checked against the buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

#include "core/kernel_signature.h"
#include "core/uop.h"
#include "devices/buffer.h"
#include "devices/device.h"

namespace uopc {

/// VAR values by name.
using VarValues = absl::flat_hash_map<std::string, int64_t>;

/// One launch: a kernel, a Buffer per BUFFER slot (index = slot), and VAR values by name.
/// It runs with the launch dims the backend rendered the kernel for, but for a grid whose
/// size is an expression of the VARs (passes/launch_dims.h): that is evaluated with the
/// launch's values.
struct KernelLaunch {
  UOp kernel;
  std::vector<Buffer> buffers;
  VarValues vars;
};

class KernelCache {
 public:
  explicit KernelCache(Device& device) : device_(device) {}

  /// Compiles the kernels not compiled yet, all in one backend compile call.
  absl::Status Prepare(absl::Span<const UOp> kernels);
  /// Checks and queues one launch (preparing its kernel if needed).
  absl::StatusOr<Event> Launch(const KernelLaunch& launch);
  /// Prepares, then queues the launches in order, and waits for them.
  absl::Status Run(absl::Span<const KernelLaunch> launches);
  /// The C (or other) source of a kernel, as the backend renders it.
  absl::StatusOr<std::string> Source(const UOp& kernel);

  struct Stats {
    int64_t compile_calls = 0, kernels_compiled = 0, launches = 0;
  };
  Stats stats();
  Device& device() { return device_; }

 private:
  struct Compiled {
    std::shared_ptr<Program> program;
    uint32_t entry = 0;
    KernelSignature signature;
    LaunchDims dims;  // as rendered
    UOp grid;         // the blocks of a run-time length: an expression of the VARs, else null
  };
  /// A launch of a MATMUL call (core/matmul_call.h): the supplied kernel of the device's
  /// plugin, its params checked against the buffers first.
  absl::StatusOr<Event> LaunchCall(const KernelLaunch& l);
  absl::Status Check(const KernelLaunch& l, const KernelSignature& sig,
                     std::vector<uopc_buffer*>* bufs, std::vector<int64_t>* vars) const;

  Device& device_;
  std::mutex mu_;
  absl::flat_hash_map<UOp, std::shared_ptr<const Compiled>> compiled_;  // one node, one kernel
  Stats stats_;
};

}  // namespace uopc
