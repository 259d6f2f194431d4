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

/// Every kernel the suite runs, by case ("alu add f32", "cast cast i8 to f16", ...): for a
/// backend's compiler to be checked on its own, with no device. The launch cases come as a
/// GPU gets them: mapped to blocks of threads.
std::vector<std::pair<std::string, UOp>> ConformanceKernels();

/// Runs the suite on `device` (its plugin and backend).
ConformanceReport RunConformance(Device& device, const ConformanceOptions& options = {});

}  // namespace uopc
