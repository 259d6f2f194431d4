// Placement: which device a node of a tensor graph is computed on. A BUFFER is where its
// ParamArg says; a COPY puts its result on its target; a STAGE that names a device holds
// its result there. Every other node is where its sources are, and a node none of whose
// sources has a device (constants, VARs, and what is computed from them alone) has none:
// it can be computed anywhere. Sources on two devices are an error: only a COPY crosses
// devices (the frontend refuses such an op before it is built).
#pragma once

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "core/uop.h"

namespace uopc {

class Placement {
 public:
  /// The device of `u`, "" for none; an error names the op and both devices.
  absl::StatusOr<std::string> Of(const UOp& u);

 private:
  absl::flat_hash_map<UOp, std::string> memo_;
};

}  // namespace uopc
