// A Target (core/target.h) as the ABI's uopc_target_args (ABI 1.4's backend_target), for
// the plugins built in this tree: the strings the args point at live in a TargetStrings
// that the plugin keeps as long as it is loaded. (The host reads the args back with
// devices/device.h's TargetFromArgs.)
#pragma once

#include <string>
#include <vector>

#include "backends/plugin_api.h"
#include "core/target.h"

namespace uopc {

/// What uopc_target_args' strings point into, its supplied kernels' descriptions among them
/// (made from target.kernels).
struct TargetStrings {
  explicit TargetStrings(Target t);
  TargetStrings(const TargetStrings&) = delete;  // (kernels point into target)
  Target target;
  std::string features, matrix_units;
  std::vector<uopc_kernel_desc> kernels;
};

/// Fills `out`'s outputs from `s` (its inputs are left as they are).
void FillTargetArgs(const TargetStrings& s, uopc_target_args* out);

}  // namespace uopc
