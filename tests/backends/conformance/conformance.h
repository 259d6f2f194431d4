// The plugin conformance suite: what every backend plugin must pass. It runs on one
// loaded device (through the real plugin loader) and checks, in order:
//   abi     versions, the optional calls absent (listed), only the entry symbol exported,
//           NULL handles refused with INVALID_ARGUMENT, capability bits honest;
//   memory  allocations of odd sizes, copies round-trip at offsets, guard bytes around
//           a buffer stay intact, a huge allocation is RESOURCE_EXHAUSTED;
//   alu     every ALU op on every dtype it is defined for, against core's reference
//           interpreter, with integer edge cases (negative division and modulo, shifts
//           past the width, wrap-around) and float ones (NaN, infinities, signed zero,
//           denormals, f16/bf16 rounding); outputs are written between guard bytes;
//   cast    every dtype to every dtype, and every same-size bitcast;
//   loops   a reduction with a run-time trip count and a kernel over a VAR;
//   launch  the loop cases and an elementwise kernel, mapped by the target's launch pass
//           to several blocks (a GPU's threads, a CPU's cores), as the host gives them;
//   queues  an event of one queue orders work on another; a launch the plugin refuses
//           leaves its queue usable;
//   peers   a copy to another device of the plugin, where it says it can (COPY_PEER);
//   supplied  each whole-op kernel the plugin supplies (ABI 2.1: its target's kernels)
//           against core's reference (core/matmul_call.h) on several layouts, within f32
//           rounding of each sum, and a launch whose params reach past a buffer refused.
// What the backend declares unsupported is skipped and listed, not failed; the report
// includes a support matrix (op x dtype). Integers and bools must match exactly; floats
// bit for bit (any NaN matches any NaN), except transcendentals within a few ulps.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/uop.h"
#include "devices/device.h"

namespace uopc {

struct ConformanceOptions {
  std::string filter;      // run only cases whose name contains this
  Device* peer = nullptr;  // another device of the plugin, for peer copies (none: skipped)
};

struct ConformanceCase {
  enum Status { kPass, kFail, kSkip };
  std::string section, name;
  Status status = kPass;
  std::string detail;  // why it failed or was skipped
};

struct ConformanceReport {
  std::vector<ConformanceCase> cases;
  int passed = 0, failed = 0, skipped = 0;
  std::string matrix;  // the support matrix, one line per op
};

/// A buffer of a kernel case in host memory: its bytes, its elements' dtype, and where the
/// kernel's slot starts in it (an output lies between guard bytes).
struct HostBuffer {
  std::vector<uint8_t>* bytes = nullptr;  // null: a slot the case leaves unused
  DType dtype = DType::kVoid;
  uint64_t offset = 0;
};
/// Runs a case's kernel on `buffers` (by slot; the output last, read back into its bytes)
/// with its VARs' values: "" or what went wrong.
using KernelLauncher =
    std::function<std::string(std::vector<HostBuffer>& buffers, const std::vector<int64_t>& vars)>;

/// A kernel case of the suite's alu, cast, loops and launch sections, with the suite's check
/// of it: `check(launch)` gives the case's inputs to `launch` and returns "" when the output
/// is core's interpreter's (bit for bit, or within the case's ulps), else what differs.
struct ConformanceKernelCase {
  std::string name;  // "alu add f32", "launch elementwise over several blocks"
  UOp kernel;        // the launch cases as a GPU gets them: mapped to blocks of threads
  std::function<std::string(const KernelLauncher& launch)> check;
};
std::vector<ConformanceKernelCase> ConformanceKernelCases();

/// Every kernel the suite runs, by case ("alu add f32", "cast cast i8 to f16", ...): for a
/// backend's compiler to be checked on its own, with no device. The launch cases come as a
/// GPU gets them: mapped to blocks of threads.
std::vector<std::pair<std::string, UOp>> ConformanceKernels();

/// Runs the suite on `device` (its plugin and backend).
ConformanceReport RunConformance(Device& device, const ConformanceOptions& options = {});

}  // namespace uopc
