// The CUDA renderer's text run: every conformance kernel rendered as the CUDA plugin renders
// it (launch cases mapped to blocks of threads, block reductions with shared memory,
// barriers, warp shuffles and first-thread stores), compiled for the CPU after
// backends/cuda/cuda_on_cpu.h and launched on the emulator's fibers with its grid, against
// core's interpreter as the conformance suite checks a device. NVRTC only compiles the text
// (render_cuda_test); here it executes, so a barrier in the wrong place, a shuffle's lanes or
// a store from every thread shows as a wrong result or an error naming the thread.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "backends/cuda/render_cuda.h"
#include "tests/backends/conformance/conformance.h"
#include "tests/testing/cuda_on_cpu_build.h"

namespace uopc {
namespace {

TEST(RenderCudaOnCpu, EveryConformanceKernelsCudaTextGivesTheInterpretersResult) {
  std::vector<ConformanceKernelCase> cases = ConformanceKernelCases();
  std::vector<std::string> sources, names;
  std::vector<LaunchDims> dims;
  for (size_t i = 0; i < cases.size(); ++i) {
    names.push_back(absl::StrCat("conf_", i));
    absl::StatusOr<CudaKernel> k = RenderCudaKernel(cases[i].kernel, names.back(), {});
    ASSERT_TRUE(k.ok()) << cases[i].name << ": " << k.status();
    sources.push_back(k->source);
    dims.push_back(k->dims);
  }
  ASSERT_TRUE(testing::BuildCudaOnCpu("conformance", sources, names).ok());
  int threaded = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string bad =
        cases[i].check([&](std::vector<HostBuffer>& buffers, const std::vector<int64_t>& vars) {
          std::vector<void*> ptrs;  // (every slot a parameter)
          for (const HostBuffer& b : buffers)
            ptrs.push_back(b.bytes ? b.bytes->data() + b.offset : nullptr);
          const absl::Status s = testing::LaunchOnCpu(names[i], dims[i], ptrs, vars);
          return s.ok() ? std::string() : s.ToString();
        });
    EXPECT_EQ(bad, "") << cases[i].name << "\n" << sources[i];
    threaded += dims[i].local[0] * dims[i].local[1] * dims[i].local[2] > 1;
  }
  EXPECT_GT(cases.size(), 300u);
  EXPECT_GE(threaded, 8);  // (the launch cases: blocks of several threads)
}

}  // namespace
}  // namespace uopc
