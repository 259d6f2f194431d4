// Rendered CUDA kernels run on the CPU, for tests: their text compiled by g++ after
// backends/cuda/cuda_on_cpu.h and CudaOnCpuPrelude(), loaded into the test (whose binary
// exports the emulator: link it with -rdynamic and take the headers as data, as
// tests/backends/cuda/BUILD.bazel's rules do), and launched on the emulator's fibers with
// the parameters the CUDA plugin passes.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <dlfcn.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "backends/cuda/cuda_emulator.h"
#include "backends/cuda/render_cuda.h"
#include "tests/testing/command.h"

namespace uopc::testing {

/// Compiles `kernels` (CudaKernel sources, each's entry named in `names`) and loads them,
/// as `file` (a name in the test's temporary folder); g++'s messages on failure. Floats as
/// the C plugin compiles its kernels': a * b + c rounded twice.
inline absl::Status BuildCudaOnCpu(const std::string& file, const std::vector<std::string>& kernels,
                                   const std::vector<std::string>& names) {
  std::string tu = "#include \"backends/cuda/cuda_on_cpu.h\"\n" + CudaOnCpuPrelude();
  for (size_t i = 0; i < kernels.size(); ++i)
    absl::StrAppend(&tu, kernels[i], "UOPC_ENTRY(", names[i], ")\n");
  const std::string dir = ::testing::TempDir(), src = dir + "/" + file + ".cc",
                    so = dir + "/" + file + ".so";
  std::ofstream(src) << tu;
  const CommandResult cc = RunCommand(
      absl::StrCat("g++ -std=c++20 -O1 -fPIC -shared -w -ffp-contract=off -fwrapv -fno-math-errno "
                   "-I",
                   Runfile(""), " -o ", so, " ", src),
      600);
  if (cc.status != 0) return absl::InternalError("g++: " + cc.out.substr(0, 4000));
  if (!dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL))  // (its entries add themselves)
    return absl::InternalError(absl::StrCat("dlopen: ", dlerror()));
  return absl::OkStatus();
}

/// Launches loaded kernel `name` on `dims` with these buffers (by slot; null where unused)
/// and VARs (each an int, as the CUDA plugin passes them).
inline absl::Status LaunchOnCpu(const std::string& name, const LaunchDims& dims,
                                std::vector<void*> buffers, const std::vector<int64_t>& vars) {
  std::vector<int> ints(vars.begin(), vars.end());
  std::vector<void*> params;
  for (void*& p : buffers) params.push_back(&p);
  for (int& v : ints) params.push_back(&v);
  const cuda::emu::KernelBody body = cuda::emu::FindKernel(name);
  if (!body) return absl::NotFoundError("no kernel " + name + " loaded");
  return cuda::emu::Launch(name, body, {dims.global[0], dims.global[1], dims.global[2]},
                           {dims.local[0], dims.local[1], dims.local[2]}, 0, params.data());
}

}  // namespace uopc::testing
