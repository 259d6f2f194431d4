// The version of uopc: of the library an integrator links and of its programs (`uopc
// --version`). Semantic: a minor release adds, a major one may change the C++ API. The
// plugin ABI (backends/plugin_api.h) and the serialized uop format (core/serialize.h) are
// versioned on their own.
#pragma once

namespace uopc {

inline constexpr int kVersionMajor = 0;
inline constexpr int kVersionMinor = 6;
inline constexpr int kVersionPatch = 0;
inline constexpr char kVersion[] = "0.6.0";

}  // namespace uopc
