// The devices of the CUDA plugin: one per GPU ("CUDA:0" ...), on its primary context.
// Memory is cuMemAlloc'd (the host's caching allocator keeps it); a queue is a stream; an
// event is a CUDA event; copies to and from host memory are staged through pinned chunks
// (a bounded pool per device, pinned_pool.h: the caller's memory is free when a copy-in
// returns, and copy-outs land in it through a host function on the stream); copies between
// two GPUs are peer copies.
// A kernel's parameters are every buffer slot (null for unused ones) then its VARs as int.
//
// CUDA's errors map to the ABI's codes: out of memory is RESOURCE_EXHAUSTED; an error that
// leaves the context unusable (an illegal address, a failed launch) is DEVICE_LOST, names
// the last kernel queued before it, and every later call on the device fails the same way.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "backends/cuda/driver.h"
#include "backends/cuda/pinned_pool.h"
#include "backends/plugin_api.h"
#include "backends/target_args.h"

struct uopc_device {
  std::string name, kind, uid, backend;
  int ordinal = 0;
  uopc::cuda::CUdevice dev = 0;
  uopc::cuda::CUcontext ctx = nullptr;
  int arch = 0;  // compute capability x 10
  std::unique_ptr<uopc::TargetStrings> target;  // from the driver's attributes
  uint32_t max_threads = 1024;
  uint64_t max_grid = 2147483647, total_mem = 0;
  std::mutex mu;
  uopc::cuda::PinnedPool* staging = nullptr;  // copies to and from host memory go through it
  std::atomic<bool> lost{false};
  std::string lost_why;  // set once, before `lost`
  // the supplied kernels (backends/cuda/matmul_kernels.h), loaded at their first launch
  std::mutex supplied_mu;
  uopc::cuda::CUmodule supplied = nullptr;
  std::map<std::string, uopc::cuda::CUfunction> supplied_entries;
};

struct uopc_buffer {
  uopc::cuda::CUdeviceptr ptr = 0;
  uint64_t size = 0;
  uopc_device* device = nullptr;
  void (*release)(void*) = nullptr;  // memory of buffer_wrap's caller: given back, not freed
  void* release_ctx = nullptr;
};

struct uopc_queue {
  uopc_device* device = nullptr;
  uopc::cuda::CUstream stream = nullptr;
  std::string last_kernel;  // the kernel queued last, to name in an error
};

struct uopc_event {
  uopc_device* device = nullptr;
  uopc::cuda::CUevent event = nullptr;
  std::string after_kernel;  // the last kernel queued before it
};

struct uopc_program {
  uopc_device* device = nullptr;
  uopc::cuda::CUmodule module = nullptr;
  std::vector<uopc::cuda::CUfunction> functions;
  std::vector<std::string> names;
};

namespace uopc::cuda {

/// Opens every GPU (primary contexts); an error says why there are none.
absl::Status OpenDevices(const Driver& driver);
/// The devices opened.
std::vector<uopc_device*> Devices();
/// The supplied kernels' program for an architecture, as the plugin's compile makes it
/// (PackBinary's form; compiled once, then from the plugin's cache).
using SuppliedBuild = absl::StatusOr<std::string> (*)(int arch);
/// Sets the device calls of the plugin's table; `build` makes the supplied kernels' program.
void FillDeviceCalls(uopc_api* api, SuppliedBuild build);
/// A compiled program as the backend's compile hands it over: magic, kind, bytes.
std::string PackBinary(bool ptx, const std::string& bytes);

}  // namespace uopc::cuda
