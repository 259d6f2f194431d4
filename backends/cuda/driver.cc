#include "backends/cuda/driver.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace uopc::cuda {
namespace {

void* OpenDriver(std::string* why) {
  for (const char* path : {"libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1"}) {
    if (void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) return h;
    if (why->empty()) *why = dlerror();
  }
  return nullptr;
}

}  // namespace

bool Driver::Present() {
  std::string why;
  return OpenDriver(&why) != nullptr;  // stays loaded: Load() would open it again anyway
}

absl::StatusOr<const Driver*> Driver::Load() {
  static const absl::StatusOr<const Driver*> loaded = []() -> absl::StatusOr<const Driver*> {
    std::string why;
    void* h = OpenDriver(&why);
    if (!h) return absl::UnavailableError(absl::StrCat("no CUDA driver (", why, ")"));
    auto d = std::make_unique<Driver>();
    std::string missing;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      if (!fn) absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
    };
    sym(d->Init, "cuInit");
    sym(d->DriverGetVersion, "cuDriverGetVersion");
    sym(d->DeviceGetCount, "cuDeviceGetCount");
    sym(d->DeviceGet, "cuDeviceGet");
    sym(d->DeviceGetName, "cuDeviceGetName");
    sym(d->DeviceTotalMem, "cuDeviceTotalMem_v2");
    sym(d->DeviceGetAttribute, "cuDeviceGetAttribute");
    sym(d->DeviceGetPCIBusId, "cuDeviceGetPCIBusId");
    sym(d->DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    sym(d->CtxSetCurrent, "cuCtxSetCurrent");
    sym(d->CtxSynchronize, "cuCtxSynchronize");
    sym(d->MemAlloc, "cuMemAlloc_v2");
    sym(d->MemFree, "cuMemFree_v2");
    sym(d->MemAllocHost, "cuMemAllocHost_v2");
    sym(d->MemFreeHost, "cuMemFreeHost");
    sym(d->MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    sym(d->MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    sym(d->MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    sym(d->MemcpyPeerAsync, "cuMemcpyPeerAsync");
    sym(d->MemGetInfo, "cuMemGetInfo_v2");
    sym(d->StreamCreate, "cuStreamCreate");
    sym(d->StreamDestroy, "cuStreamDestroy_v2");
    sym(d->StreamSynchronize, "cuStreamSynchronize");
    sym(d->StreamWaitEvent, "cuStreamWaitEvent");
    sym(d->LaunchHostFunc, "cuLaunchHostFunc");
    sym(d->EventCreate, "cuEventCreate");
    sym(d->EventRecord, "cuEventRecord");
    sym(d->EventSynchronize, "cuEventSynchronize");
    sym(d->EventQuery, "cuEventQuery");
    sym(d->EventDestroy, "cuEventDestroy_v2");
    sym(d->ModuleLoadData, "cuModuleLoadData");
    sym(d->ModuleUnload, "cuModuleUnload");
    sym(d->ModuleGetFunction, "cuModuleGetFunction");
    sym(d->FuncSetAttribute, "cuFuncSetAttribute");
    sym(d->LaunchKernel, "cuLaunchKernel");
    sym(d->GetErrorName, "cuGetErrorName");
    sym(d->GetErrorString, "cuGetErrorString");
    if (!missing.empty())
      return absl::FailedPreconditionError(
          absl::StrCat("the CUDA driver lacks ", missing, " (too old a driver?)"));
    if (CUresult r = d->Init(0); r != kSuccess)
      return absl::UnavailableError(absl::StrCat("the CUDA driver did not start: ", d->Error(r)));
    return d.release();  // for the life of the process, as the library is
  }();
  return loaded;
}

std::string Driver::Error(CUresult r) const {
  const char *name = nullptr, *text = nullptr;
  GetErrorName(r, &name);
  GetErrorString(r, &text);
  return absl::StrCat(name ? name : absl::StrCat("CUresult ", r), " (", text ? text : "?", ")");
}

}  // namespace uopc::cuda
