// Plan: what running a tensor graph takes, across devices: the buffers (inputs, outputs,
// temporaries), each on its device, and the steps in order: kernel launches (a kernel on
// one device, with its buffers, the VARs it reads and its launch dims) and copies (bytes
// from a buffer of one device to a buffer of another) and collectives (with the other
// ranks of a process group). Kernels are renumbered so that the
// same computation is the same kernel node in every plan (and compiles once per device).
//
// An output may be an input (Plan::outputs holds an input's index): a step writes into
// that buffer, and the root is the input updated in place.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"

#include "core/kernel_signature.h"
#include "core/pass_manager.h"
#include "core/uop.h"

namespace uopc {

struct Plan {
  enum class Role { kInput, kOutput, kTemp };
  struct BufferSpec {
    DType dtype = DType::kVoid;
    int64_t count = 0;
    std::string device;  // "CPU:1"
    Role role = Role::kTemp;
    uint64_t bytes() const { return static_cast<uint64_t>(count) * DTypeSize(dtype); }
  };
  /// A launch of `ast` (a SINK of loop IR, or a MATMUL call of a kernel the device's plugin
  /// supplies: core/matmul_call.h; BUFFER slots 0..n-1) with plan buffer
  /// `buffers[slot]` at each slot; it stores into the plan buffers `writes`. Its launch
  /// dims are those the device's backend renders it for (devices/kernel_cache.h).
  struct Kernel {
    UOp ast;
    std::vector<int> buffers;
    std::vector<int> writes;
  };
  /// `bytes` bytes from plan buffer `src` at `src_offset` to `dst` at `dst_offset`.
  struct Copy {
    int src = 0, dst = 0;
    uint64_t src_offset = 0, dst_offset = 0, bytes = 0;
  };
  /// What the ranks of a process group make of plan buffer `src` (count elements), into
  /// `dst` (runtime/collective_group.h runs it).
  struct Collective {
    CollectiveArg arg;
    int src = 0, dst = 0;
    int64_t count = 0;
  };
  /// Room for more kinds (a host callback): a std::variant grows.
  struct Step {
    std::variant<Kernel, Copy, Collective> op;
    std::string device;  // where it runs: a kernel's device, a copy's destination, a collective's
  };

  /// Memory that temporaries whose lives do not overlap share (runtime/memory_plan.h).
  struct Arena {
    std::string device;
    uint64_t bytes = 0;
  };

  std::vector<BufferSpec> buffers;  // inputs first (in canonical order), then the rest
  std::vector<Step> steps;          // in run order
  std::vector<int> outputs;         // plan buffer of each root
  std::vector<VarArg> vars;         // the VARs its kernels read, sorted by name
  int num_inputs = 0;
  std::vector<Arena> arenas;
  std::vector<int> arena_of;  // of each buffer: its arena, or -1 (memory of its own)

  /// The kernel steps, in order.
  std::vector<const Kernel*> kernels() const;
  /// The copy steps, in order.
  std::vector<const Copy*> copies() const;
  /// The bytes a run allocates: its outputs' and temporaries' (those that share arenas
  /// counted once an arena).
  uint64_t OwnBytes() const;
};

/// The plan of a lowered graph (Rangeify's output, after any later passes).
absl::StatusOr<Plan> ExtractPlan(const UOp& lowered, int num_inputs);
/// Lowers a canonical tensor SINK (inputs numbered 0..num_inputs-1) through `pipeline`.
absl::StatusOr<Plan> Lower(const UOp& canonical_sink, int num_inputs, PassManager& pipeline,
                           const PassContext& ctx = {});
/// One line per step, with its device and bytes (what UOPC_DEBUG=1 prints):
///   "  2 copy   CPU:0 -> CPU:1  4.0 KiB"
std::string PlanString(const Plan& plan);
/// "12 B", "4.0 KiB", "1.5 MiB"
std::string ByteString(uint64_t bytes);

}  // namespace uopc
