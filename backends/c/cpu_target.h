// The target of the CPU this process runs on, read from the hardware and never assumed:
// ISA features from CPUID, kept only where the OS saves their registers (XGETBV: the
// AVX, AVX-512 and AMX states), named as Linux's /proc/cpuinfo names them; the vector
// width and registers from them; the caches from sysfs (cpu0's cache/index*/: level, type,
// size, ways); the cores online; AMX's tile multiply as a matrix unit where it is there.
// What the C plugin's backend_target returns (ABI 1.4).
#pragma once

#include <string>
#include <vector>

#include "core/target.h"

namespace uopc {

/// This machine's CPU. `sysfs_cpu` is where the caches are read from (tests point it at
/// a folder of their own); a cache it cannot read keeps the reference CPU's value.
Target HostCpuTarget(const std::string& sysfs_cpu = "/sys/devices/system/cpu");

/// The ISA features CPUID reports and the OS enabled, sorted ("avx2", "avx512f", ...).
std::vector<std::string> HostCpuFeatures();

}  // namespace uopc
