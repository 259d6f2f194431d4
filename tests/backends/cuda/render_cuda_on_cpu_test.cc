// The CUDA renderer's text run: every conformance kernel rendered as the CUDA plugin renders
// it (launch cases mapped to blocks of threads, block reductions with shared memory,
// barriers, warp shuffles and first-thread stores), compiled for the CPU after
// backends/cuda/cuda_on_cpu.h and launched on the emulator's fibers with its grid, against
// core's interpreter as the conformance suite checks a device. NVRTC only compiles the text
// (render_cuda_test); here it executes, so a barrier in the wrong place, a shuffle's lanes or
// a store from every thread shows as a wrong result or an error naming the thread.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "backends/cuda/cuda_emulator.h"
#include "backends/cuda/render_cuda.h"
#include "tests/backends/conformance/conformance.h"
#include "tests/testing/command.h"

namespace uopc {
namespace {

TEST(RenderCudaOnCpu, EveryConformanceKernelsCudaTextGivesTheInterpretersResult) {
  std::vector<ConformanceKernelCase> cases = ConformanceKernelCases();
  std::string tu = "#include \"backends/cuda/cuda_on_cpu.h\"\n" + CudaOnCpuPrelude();
  std::vector<CudaKernel> kernels;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string name = absl::StrCat("conf_", i);
    absl::StatusOr<CudaKernel> k = RenderCudaKernel(cases[i].kernel, name, {});
    ASSERT_TRUE(k.ok()) << cases[i].name << ": " << k.status();
    absl::StrAppend(&tu, k->source, "UOPC_ENTRY(", name, ")\n");
    kernels.push_back(*k);
  }
  // compiled as the C plugin compiles its kernels' floats: a * b + c rounded twice
  const std::string dir = ::testing::TempDir();
  const std::string src = dir + "/cuda_on_cpu.cc", so = dir + "/cuda_on_cpu.so";
  std::ofstream(src) << tu;
  const testing::CommandResult cc = testing::RunCommand(
      absl::StrCat("g++ -std=c++20 -O1 -fPIC -shared -w -ffp-contract=off -fwrapv "
                   "-fno-math-errno -I",
                   testing::Runfile(""), " -o ", so, " ", src),
      300);
  ASSERT_EQ(cc.status, 0) << cc.out.substr(0, 4000);
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);  // (its entries add themselves)
  ASSERT_NE(lib, nullptr) << dlerror();
  int checked = 0, threaded = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string name = absl::StrCat("conf_", i);
    const LaunchDims& d = kernels[i].dims;
    const std::string bad =
        cases[i].check([&](std::vector<HostBuffer>& buffers, const std::vector<int64_t>& vars) {
          std::vector<void*> ptrs;  // (every slot a parameter, then each VAR an int)
          for (const HostBuffer& b : buffers)
            ptrs.push_back(b.bytes ? b.bytes->data() + b.offset : nullptr);
          std::vector<int> ints(vars.begin(), vars.end());
          std::vector<void*> params;
          for (void*& p : ptrs) params.push_back(&p);
          for (int& v : ints) params.push_back(&v);
          const absl::Status s = cuda::emu::Launch(
              name, cuda::emu::FindKernel(name), {d.global[0], d.global[1], d.global[2]},
              {d.local[0], d.local[1], d.local[2]}, 0, params.data());
          return s.ok() ? std::string() : s.ToString();
        });
    EXPECT_EQ(bad, "") << cases[i].name << "\n" << kernels[i].source;
    ++checked;
    threaded += d.local[0] * d.local[1] * d.local[2] > 1;
  }
  EXPECT_GT(checked, 300);
  EXPECT_GE(threaded, 8);  // (the launch cases: blocks of several threads)
}

}  // namespace
}  // namespace uopc
