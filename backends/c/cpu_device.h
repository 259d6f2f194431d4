// The devices of the C plugin: N CPU devices in one process ("CPU:0" ... "CPU:N-1",
// UOPC_CPU_DEVICES=N, default 1), each with its own memory accounting (a limit of
// UOPC_CPU_MEMORY bytes, default the machine's memory) and its own queues. A queue is a
// worker thread (backends/c/work_queue.h): kernels and copies run there in order, while
// the host goes on, so that two devices run at once. Programs are the backend's shared
// objects, loaded with dlopen. Copies between two CPU devices of the plugin are peer
// copies (a memmove on the queue they are given).
//
// Every call validates its arguments before anything is queued, and a buffer is freed
// only once the work queued on it is done (each piece of work holds a reference).
//
// A testing hook, UOPC_CPU_FAULT=CPU:1@N, makes a device fail as hardware does: its N-th
// launch fails with DEVICE_LOST, and so does every later call on that device.
//
// UOPC_CPU_EMULATE=sm_90 adds a device EMU:0 that emulates that GPU: the backend describes
// the GPU's target for it (backends/cuda/gpu_target.h), so the host lowers its kernels as
// for that GPU (blocks and threads: GLOBAL and LOCAL ranges), and they run here, the blocks
// spread over the cores and each block's threads one after another. Its memory is host
// memory, as a CPU device's; its type is ACCEL (not a CPU's, not a CUDA device's).
//
// The names' prefix ("CPU") and the plugin's name are compile-time settings, so that a
// second copy of the plugin can be built under other names (tests of copies between
// plugins use one, with devices "HOST:n" and variables UOPC_HOST_*).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "backends/c/work_queue.h"
#include "backends/plugin_api.h"
#include "core/kernel_signature.h"
#include "core/target.h"

#ifndef UOPC_C_DEVICE_PREFIX
#define UOPC_C_DEVICE_PREFIX "CPU"
#endif

struct uopc_device {
  std::string name, kind, uid;
  std::string emulates;  // "sm_90": an emulated GPU, EMU:0 (its kernels are that GPU's)
  int multiprocessors = 0;  // EMU:0's GPU's (the launches of its supplied kernels follow them)
  // EMU:0's: the GPU's plugin's, their CUDA source run on the CPU (backends/cuda/
  // emulated_matmul_kernels.h)
  std::vector<uopc::SuppliedKernel> supplies;
  uint64_t limit = 0;  // bytes
  int64_t fail_at = 0;  // the launch that loses the device (UOPC_CPU_FAULT); 0: none
  std::mutex mu;
  uint64_t in_use = 0;  // bytes, under mu
  std::atomic<int64_t> launches{0};
  std::atomic<bool> lost{false};
};

struct uopc_buffer {
  void* data;
  uint64_t size;
  uopc_device* device;
  std::atomic<int> refs{1};  // the owner's, and one per piece of queued work using it
  void (*release)(void*) = nullptr;  // memory of buffer_wrap's caller: given back, not freed
  void* release_ctx = nullptr;
  // Its content, as a supplied matmul's b (backends/c/packed_b_cache.h): an id no other buffer
  // has (0 for wrapped memory), the writes queued work has finished making to it, and whether
  // the host was given its address (then it may change unseen, and is never kept packed).
  uint64_t id = 0;
  std::atomic<uint64_t> writes{0};
  mutable std::atomic<bool> exposed{false};
};

struct uopc_program {
  void* handle;
  // NAME_entry(bufs, vars, chunk, chunks) of each kernel (backends/c/render_c.h)
  std::vector<void (*)(void* const*, const long long*, long long, long long)> entries;
  // the buffer slots each kernel may write, as its render found them (empty: not known, so
  // a launch counts a write to every buffer it takes)
  std::vector<std::vector<bool>> writes;
};

struct uopc_queue {
  uopc_device* device;
  uopc::WorkQueue work;
};

struct uopc_event {
  std::shared_ptr<uopc::Completion> completion;
};

namespace uopc::cpu {

/// The path of a loadable shared object holding a sealed binary (the backend's compiler).
using Materializer = std::function<absl::StatusOr<std::string>(absl::string_view sealed)>;

/// Reads the configuration (UOPC_CPU_DEVICES, UOPC_CPU_MEMORY, UOPC_CPU_FAULT) and creates
/// the devices; an error names the variable and what it accepts. Only the first call
/// configures; later calls repeat its outcome.
uopc_error* Initialize(Materializer materialize);
/// Sets the device calls of the plugin's table.
void FillDeviceCalls(uopc_api* api);
/// Notes which buffer slots kernel `name` may write (its signature's `written`), as render
/// finds them: a program loaded later with that entry counts a launch's writes to those
/// buffers only, so that a weight a kernel only reads stays packed (backends/c/packed_b_cache.h).
void NoteKernelWrites(const std::string& name, const KernelSignature& sig);
/// "CPU": the prefix of the device names.
constexpr const char* kPrefix = UOPC_C_DEVICE_PREFIX;

}  // namespace uopc::cpu
