// The CUDA driver API, loaded at run time with dlopen (libcuda.so.1, from the loader's path
// or /usr/local/nvidia/lib64): the functions the CUDA device uses, declared here with the
// types they take, so that the plugin builds, and loads, on machines without CUDA.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace uopc::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUhostFn = void (*)(void*);

inline constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNoDevice = 100,
                          kNotReady = 600, kIllegalAddress = 700, kLaunchFailed = 719;
/// Whether `r` leaves the context unusable ("sticky": every later call fails the same way):
/// an illegal or misaligned address, an illegal instruction or address space, a device-side
/// assert, a launch timeout, a hardware stack error, an invalid PC, a failed launch, an
/// uncorrectable ECC error or an unknown error. The device is then lost.
constexpr bool BreaksContext(CUresult r) {
  return r == kIllegalAddress || r == 702 /* launch timeout */ || r == 710 /* assert */ ||
         r == 714 /* hardware stack */ || r == 715 /* illegal instruction */ ||
         r == 716 /* misaligned address */ || r == 717 /* invalid address space */ ||
         r == 718 /* invalid PC */ || r == kLaunchFailed || r == 214 /* ECC uncorrectable */ ||
         r == 999 /* unknown */;
}
inline constexpr int kAttrMaxThreadsPerBlock = 1, kAttrMaxGridDimX = 5, kAttrWarpSize = 10,
                     kAttrMultiprocessors = 16, kAttrL2Bytes = 38, kAttrCcMajor = 75,
                     kAttrCcMinor = 76, kAttrSharedPerBlockOptin = 97;
inline constexpr int kFuncMaxDynamicShared = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
inline constexpr unsigned kStreamNonBlocking = 1, kEventDisableTiming = 2;

struct Driver {
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int*);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetName)(char*, int, CUdevice);
  CUresult (*DeviceTotalMem)(size_t*, CUdevice);
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*DeviceGetPCIBusId)(char*, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxSynchronize)();
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemAllocHost)(void**, size_t);
  CUresult (*MemFreeHost)(void*);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*MemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*MemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
  CUresult (*MemGetInfo)(size_t*, size_t*);
  CUresult (*StreamCreate)(CUstream*, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*LaunchHostFunc)(CUstream, CUhostFn, void*);
  CUresult (*EventCreate)(CUevent*, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventQuery)(CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*FuncSetAttribute)(CUfunction, int, int);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**);
  CUresult (*GetErrorName)(CUresult, const char**);
  CUresult (*GetErrorString)(CUresult, const char**);

  /// Whether libcuda.so.1 can be opened at all (cheap: no driver is initialized).
  static bool Present();
  /// The driver, loaded and initialized (cuInit) once per process; an error says why not
  /// (no library, a function missing, no GPU), UNAVAILABLE when the machine lacks them.
  static absl::StatusOr<const Driver*> Load();
  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
  std::string Error(CUresult r) const;
};

}  // namespace uopc::cuda
