// The GPT programs' --device flag: one device ("CPU", "CPU:1", later "CUDA:0"), or several,
// comma-separated, over which the model is split as a pipeline (Gpt::Split). Several CPU
// devices exist when UOPC_CPU_DEVICES says so.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

#include "frontend/nn.h"

namespace uopc {

inline constexpr char kDeviceHelp[] =
    "the device to run on (CPU, CPU:1, ...), or several, comma-separated, to split the model's "
    "blocks over them as a pipeline (CPU:0,CPU:1; UOPC_CPU_DEVICES=2 makes two CPU devices)";

/// The devices of a --device value; throws uopc::Error naming a device that does not exist,
/// or an empty name ("CPU:0," or "CPU:0,,CPU:1").
inline std::vector<DeviceRef> DeviceList(const std::string& flag) {
  if (absl::StripAsciiWhitespace(flag).empty())
    ThrowInvalid("--device is empty; expected a device name such as CPU");
  std::vector<DeviceRef> out;
  for (absl::string_view name : absl::StrSplit(flag, ',')) {
    if (absl::StripAsciiWhitespace(name).empty())
      ThrowInvalid("--device " + flag + ": an empty device name; expected names such as " +
                   "CPU:0,CPU:1, comma-separated");
    const absl::string_view n = absl::StripAsciiWhitespace(name);
    // another rank's device ("rank1/CPU:0") is a pipeline stage: --pp places the stages
    if (absl::StartsWithIgnoreCase(n, "rank") && n.find('/') != absl::string_view::npos)
      ThrowInvalid("--device " + flag + ": " + std::string(n) +
                   " names a rank's device; a pipeline over ranks is --pp P (under "
                   "uopc_launch), and --device names this process's own devices (CPU:0)");
    DeviceRef d{std::string(n)};
    d.get();  // exists?
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace uopc
