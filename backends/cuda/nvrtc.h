// NVRTC, loaded at run time with dlopen (the plugin builds and loads on machines without
// CUDA): the few functions the CUDA backend uses, declared here rather than taken from
// nvrtc.h. Found in UOPC_CUDA_PATH/lib64, then /usr/local/cuda/lib64, then wherever the
// loader finds libnvrtc.so.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace uopc {

/// What ptxas reports of one kernel (NVRTC with --ptxas-options=-v).
struct PtxasInfo {
  std::string function;
  int registers = 0;
  int64_t stack_bytes = 0, spill_store_bytes = 0, spill_load_bytes = 0;
};
/// Each entry function's resources in an NVRTC log, in the log's order.
std::vector<PtxasInfo> ParsePtxasInfo(absl::string_view log);

class Nvrtc {
 public:
  /// The library, loaded once per process; an error says where it looked.
  static absl::StatusOr<const Nvrtc*> Load();

  /// "13.0"
  const std::string& version() const { return version_; }
  /// The architectures (compute capability x 10: 80, 90, ...) NVRTC can make a cubin for.
  const std::vector<int>& archs() const { return archs_; }

  struct Binary {
    bool ptx = false;  // PTX for the driver to compile (an arch newer than this NVRTC)
    std::string bytes;
    std::string log;  // NVRTC's log (with --ptxas-options=-v, each kernel's resources)
  };
  /// `source` compiled for compute capability `arch` (90: sm_90) with `options`: a cubin,
  /// or, for an arch newer than this NVRTC, PTX of the newest arch it knows below it (the
  /// driver compiles that). A compile error carries NVRTC's log.
  absl::StatusOr<Binary> Compile(const std::string& source, int arch,
                                 const std::vector<std::string>& options) const;

 private:
  Nvrtc() = default;
  using Program = struct _nvrtcProgram*;
  int (*create_)(Program*, const char*, const char*, int, const char* const*, const char* const*);
  int (*compile_)(Program, int, const char* const*);
  int (*destroy_)(Program*);
  int (*log_size_)(Program, size_t*);
  int (*log_)(Program, char*);
  int (*cubin_size_)(Program, size_t*);
  int (*cubin_)(Program, char*);
  int (*ptx_size_)(Program, size_t*);
  int (*ptx_)(Program, char*);
  const char* (*error_)(int);
  std::string version_;
  std::vector<int> archs_;
};

}  // namespace uopc
