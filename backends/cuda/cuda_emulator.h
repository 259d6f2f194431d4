// A CUDA kernel compiled for the CPU (backends/cuda/cuda_on_cpu.h), launched as the driver
// launches it on a GPU: every block of the grid, and in a block every thread a fiber of its
// own, so that __syncthreads and the warp's collective instructions (ldmatrix, mma.sync) wait
// for the threads they wait for on the hardware. A block's fibers take turns on one CPU
// thread (a thread runs until it waits); blocks may run on several CPU threads at once.
//
// It checks what the hardware leaves undefined or would hang on, and says which thread broke
// it: a barrier or a warp instruction that not every thread reaches, a warp instruction that
// the lanes of a warp do not all execute, misaligned or out-of-range shared memory. So a
// kernel that runs here runs the same instructions in the same order of dependences as on a
// GPU, and a kernel's fragment layouts are checked without one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace uopc::cuda::emu {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

/// A kernel's entry on the CPU: its parameters as cuLaunchKernel takes them (params[i]
/// points to the i-th argument's value).
using KernelBody = void (*)(void* const* params);

/// Runs `n` calls of `body` (0 to n - 1), each wholly on one CPU thread, perhaps at once.
using ParallelFor = std::function<void(int n, const std::function<void(int)>& body)>;

/// Launches `body` on `grid` blocks of `block` threads with `shared_bytes` of dynamic shared
/// memory a block (filled with 0xff bytes, so that what no thread wrote reads as a NaN), on
/// the calling thread or over `parallel`'s. FailedPrecondition naming `kernel`, the block and
/// the thread where a thread breaks one of the rules above (the launch stops there);
/// InvalidArgument for no `body`, an empty grid or more than 1,024 threads a block.
absl::Status Launch(absl::string_view kernel, KernelBody body, Dim3 grid, Dim3 block,
                    uint32_t shared_bytes, void* const* params,
                    const ParallelFor& parallel = nullptr);

/// The kernels compiled for the CPU, by entry name (cuda_on_cpu.h's UOPC_ENTRY adds them).
bool AddKernel(const char* name, KernelBody body);
KernelBody FindKernel(absl::string_view name);

// ---- what a running thread sees (for cuda_on_cpu.h) ----

struct ThreadIds {
  Dim3 thread, block, block_dim, grid_dim;
};
/// The running thread's indices.
const ThreadIds& Ids();
/// __syncthreads: waits until every thread of the block that has not exited has come.
void SyncThreads();
/// A warp-wide instruction: waits until all 32 lanes of the thread's warp have come with the
/// same `op`, then `op` runs once with every lane's `mine`, indexed by lane. `op` returns ""
/// or what is wrong, which fails the launch.
using WarpOp = std::string (*)(void* const lanes[32]);
void WarpCollective(WarpOp op, const char* instruction, void* mine);
/// The block's dynamic shared memory; "" when [p, p + bytes) lies in it, aligned to `align`,
/// else what is wrong.
unsigned char* DynamicShared();
std::string CheckShared(const void* p, uint32_t bytes, uint32_t align);
/// cp.async: `bytes` from `global` to `shared` (both aligned to `bytes`), copied when the
/// thread waits for the group it is committed in, not before.
void CpAsync(void* shared, const void* global, uint32_t bytes);
void CpAsyncCommit();
/// Copies all but the newest `pending` committed groups.
void CpAsyncWait(int pending);
/// Ends the launch with `what`, naming the running thread (its frames unwind; the other
/// threads stop where they wait).
[[noreturn]] void Fail(const std::string& what);

}  // namespace uopc::cuda::emu
