// The CUDA backend without a GPU: golden CUDA source for a few kernels, and every kernel of
// the conformance suite compiled by NVRTC to cubins for sm_90 and sm_80 (skipped, saying
// why, where NVRTC is not installed).
#include "backends/cuda/render_cuda.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "absl/base/casts.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "backends/cuda/nvrtc.h"
#include "core/float16.h"
#include "passes/block_reduce.h"
#include "passes/reduce_to_accumulators.h"
#include "tests/backends/conformance/conformance.h"
#include "tests/testing/command.h"
#include "tests/testing/seed_program.h"

namespace uopc {
namespace {

// The CUDA prelude's f16 NaN conversions (PTX's cvt makes every NaN 0x7fff) keep the bits
// the reference does: compiled here by gcc as the plain C they are, loaded with dlopen, and
// checked on every f16 NaN and every f32 NaN against core/float16.
TEST(RenderCuda, HalfNaNsKeepTheReferencesBits) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  std::ofstream(dir + "/nan_bits.c")
      << "#include <stdint.h>\n#define UOPC_FN static inline\n"
      << HalfNanBits()
      << "uint32_t to_f32(uint16_t h) { return uopc_f16_nan_to_f32_bits(h); }\n"
         "uint16_t to_f16(uint32_t u) { return uopc_f32_nan_to_f16_bits(u); }\n";
  testing::CommandResult cc = testing::RunCommand("gcc -O2 -shared -fPIC -o " + dir +
                                                  "/nan_bits.so " + dir + "/nan_bits.c");
  ASSERT_EQ(cc.status, 0) << cc.out;
  void* so = dlopen((dir + "/nan_bits.so").c_str(), RTLD_NOW);
  ASSERT_NE(so, nullptr) << dlerror();
  auto to_f32 = reinterpret_cast<uint32_t (*)(uint16_t)>(dlsym(so, "to_f32"));
  auto to_f16 = reinterpret_cast<uint16_t (*)(uint32_t)>(dlsym(so, "to_f16"));
  ASSERT_TRUE(to_f32 && to_f16);
  int64_t nans = 0, bad = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7fffu) <= 0x7c00u) continue;
    ++nans;
    const float want = F16ToF32(static_cast<uint16_t>(h));
    bad += to_f32(static_cast<uint16_t>(h)) != absl::bit_cast<uint32_t>(want);
  }
  EXPECT_EQ(nans, 2046);
  for (uint64_t u = 0x7f800001u; u <= 0xffffffffu; ++u) {
    if ((u & 0x7fffffffu) <= 0x7f800000u) {  // past the positive NaNs: on to the negative ones
      u = 0xff800000u;
      continue;
    }
    bad += to_f16(static_cast<uint32_t>(u)) != F32ToF16(absl::bit_cast<float>(static_cast<uint32_t>(u)));
  }
  EXPECT_EQ(bad, 0);
  dlclose(so);
}

TEST(RenderCuda, SeedProgramGetsAThreadPerRow) {
  // the output loop (4 rows) becomes 4 threads; the run-time trip count stays a loop
  absl::StatusOr<CudaKernel> k = RenderCudaKernel(testing::SeedTripCountKernel(), "k", {});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->dims.global[0], 1u);
  EXPECT_EQ(k->dims.local[0], 4u);
  EXPECT_EQ(k->source,
            "extern \"C\" __global__ void k(float* __restrict__ data0, int* __restrict__ data1, "
            "float* __restrict__ data2) {\n"
            "  float acc0;\n"
            "  int val0 = data1[0];\n"
            "  int ridx2 = blockIdx.x;\n"
            "  int ridx3 = threadIdx.x;\n"
            "  acc0 = 0.0f;\n"
            "  int alu0 = (ridx3*8);\n"
            "  for (int ridx1 = 0; ridx1 < val0; ridx1++) {\n"
            "    float val1 = acc0;\n"
            "    float val2 = data0[((int)((unsigned int)alu0+(unsigned int)ridx1))];\n"
            "    acc0 = (val1+val2);\n"
            "  }\n"
            "  float val3 = acc0;\n"
            "  data2[ridx3] = val3;\n"
            "}\n")
      << k->source;
}

TEST(RenderCuda, ElementwiseKernelsGetAThreadPerElement) {
  UOp a = UOp::Buffer(DType::kF16, 0, 1024), o = UOp::Buffer(DType::kI32, 2, 1024);
  UOp i = UOp::Range(1024, 0);
  UOp v = (a.Index(i).Load() * a.Index(i).Load()).Cast(DType::kI32) + i;
  absl::StatusOr<CudaKernel> k =
      RenderCudaKernel(UOp::Sink({o.Index(i).Store(v).End({i})}), "e", {256, 1u << 31});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->dims.global[0], 4u);
  EXPECT_EQ(k->dims.local[0], 256u);
  const std::string& s = k->source;
  EXPECT_NE(s.find("extern \"C\" __global__ void e(uint16_t* __restrict__ data0, void* unused1, "
                   "int* __restrict__ data2)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("int ridx1 = blockIdx.x;"), std::string::npos) << s;
  EXPECT_NE(s.find("int ridx2 = threadIdx.x;"), std::string::npos) << s;
  EXPECT_NE(s.find("uopc_f16_to_f32(data0["), std::string::npos) << s;    // f16 from its bits
  EXPECT_NE(s.find("uopc_rf16("), std::string::npos) << s;                 // rounded after *
  EXPECT_NE(s.find("((int)((unsigned int)"), std::string::npos) << s;      // + wraps unsigned
  EXPECT_EQ(s.find("for ("), std::string::npos) << s;                      // no loop left
}

// A sum of 4 rows of 1,024 as a GPU lowers it (passes/block_reduce.h): a block a row, and 9
// stages (the threads' sums, then 8 of pairs), each's threads threadIdx.x again. The threads'
// sums and the first two stages of pairs write the block's shared memory, each then waited
// for (__syncthreads); from 32 pairs on, what the first warp holds is combined in registers,
// read 16, 8, 4, 2 and 1 lanes up by shuffles, with no barrier for the block; the last stage
// writes shared memory, waited for, and the block's result is stored by its first thread.
TEST(RenderCuda, ABlockReductionSharesMemoryShufflesInAWarpAndStoresOnce) {
  const Target gpu = Target::ReferenceGpu();
  UOp x = UOp::Buffer(DType::kF32, 0, 4096), out = UOp::Buffer(DType::kF32, 1, 4);
  UOp i = UOp::Range(4, 0), j = UOp::Range(1024, 1, RangeKind::kReduce);
  UOp sum = UOp::Derived(Ops::REDUCE, {x.Index(i * 1024 + j).Load(), j}, ReduceArg{Ops::ADD});
  UOp kernel =
      AccumulateKernel(BlockReduceKernel(UOp::Sink({out.Index(i).Store(sum).End({i})}), gpu), gpu);
  absl::StatusOr<CudaKernel> k = RenderCudaKernel(kernel, "b", {});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->dims.global[0], 4u);
  EXPECT_EQ(k->dims.local[0], 256u);
  const std::string& s = k->source;
  auto count = [&](const std::string& what) {
    int n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("__shared__ float acc"), 2) << s;
  EXPECT_EQ(count("__syncthreads();"), 4) << s;
  EXPECT_EQ(count("__shfl_down_sync(0xffffffffu, acc"), 5) << s;
  for (int c : {16, 8, 4, 2, 1})
    EXPECT_NE(s.find(absl::StrCat(", ", c, ");")), std::string::npos) << c << "\n" << s;
  EXPECT_EQ(count("= threadIdx.x;"), 9) << s;
  EXPECT_EQ(count("threadIdx.y"), 0) << s;
  EXPECT_EQ(count("if (threadIdx.x == 0) data1["), 1) << s;
  // a barrier where threads past a run-time end have returned would hang the block: refused
  UOp n = UOp::Var("n", 1, 256), l = UOp::Range(n, 2, RangeKind::kLocal);
  UOp shared = UOp::Make(Ops::ALLOC, DType::kF32, {}, ParamArg{0, 256, std::string(kSharedMemory)});
  UOp wrote = shared.Index(l).Store(x.Index(l).Load()).End({l});
  UOp g = UOp::Range(1, 3, RangeKind::kGlobal);
  UOp bad = UOp::Sink(
      {out.Index(g)
           .Store(shared.After({UOp::Derived(Ops::BARRIER, {wrote})}).Index(UOp::Int(0)).Load())
           .End({g})});
  absl::StatusOr<CudaKernel> refused = RenderCudaKernel(bad, "r", {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("BARRIER after threads past a run-time end"),
            std::string::npos)
      << refused.status();
  // a warp's registers are read at the thread's own element or c lanes up, nowhere else
  UOp t = UOp::Range(64, 4, RangeKind::kLocal);
  UOp regs = UOp::Make(Ops::ALLOC, DType::kF32, {}, ParamArg{0, 64, std::string(kWarpRegisters)});
  UOp set = regs.Index(t).Store(x.Index(t).Load()).End({t});
  UOp g2 = UOp::Range(1, 5, RangeKind::kGlobal), t2 = UOp::Range(64, 6, RangeKind::kLocal);
  UOp read = regs.After({UOp::Derived(Ops::BARRIER, {set})}).Index(t2 * 2).Load();
  UOp odd = UOp::Sink({out.Index(t2.Mod(4)).Store(read).End({g2, t2})});
  refused = RenderCudaKernel(odd, "w", {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("warp's registers indexed by a mul"), std::string::npos)
      << refused.status();
}

// Every conformance kernel, in one translation unit, compiled for `arch`.
void CompilesForArch(int arch) {
  absl::StatusOr<const Nvrtc*> nvrtc = Nvrtc::Load();
  if (!nvrtc.ok()) GTEST_SKIP() << "no NVRTC here: " << nvrtc.status().message();
  std::string tu = CudaPrelude();
  int n = 0;
  for (const auto& [name, kernel] : ConformanceKernels()) {
    absl::StatusOr<CudaKernel> k = RenderCudaKernel(kernel, absl::StrCat("conf_", n++), {});
    ASSERT_TRUE(k.ok()) << name << ": " << k.status();
    if (absl::StartsWith(name, "launch ")) {  // blocks
      EXPECT_GT(k->dims.global[0], 1u) << name;
    }
    tu += k->source;
  }
  EXPECT_GT(n, 300);
  absl::StatusOr<Nvrtc::Binary> b =
      (*nvrtc)->Compile(tu, arch, {"-fmad=false", "-w", "--ptxas-options=-v"});
  ASSERT_TRUE(b.ok()) << b.status().message().substr(0, 3000);
  EXPECT_FALSE(b->ptx) << "NVRTC " << (*nvrtc)->version() << " made no cubin for sm_" << arch;
  EXPECT_EQ(b->bytes.substr(0, 4), "\x7f" "ELF");  // a cubin is an ELF file
  // and each fits a GPU thread: no spills, at most 128 registers
  const std::vector<PtxasInfo> info = ParsePtxasInfo(b->log);
  EXPECT_EQ(static_cast<int>(info.size()), n);
  for (const PtxasInfo& k : info) {
    EXPECT_LE(k.registers, 128) << k.function;
    EXPECT_EQ(k.spill_store_bytes + k.spill_load_bytes, 0) << k.function;
  }
}

TEST(RenderCuda, EveryConformanceKernelCompilesForSm90) { CompilesForArch(90); }
TEST(RenderCuda, EveryConformanceKernelCompilesForSm80) { CompilesForArch(80); }

TEST(RenderCuda, PtxasInfoIsReadFromTheLog) {
  const std::vector<PtxasInfo> info = ParsePtxasInfo(
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n"
      "ptxas info    : Function properties for k1\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 0 barriers\n"
      "ptxas info    : Compiling entry function 'k2' for 'sm_90'\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 16 bytes smem\n");
  ASSERT_EQ(info.size(), 2u);
  EXPECT_EQ(info[0].function, "k1");
  EXPECT_EQ(info[0].registers, 32);
  EXPECT_EQ(info[0].stack_bytes, 8);
  EXPECT_EQ(info[0].spill_store_bytes, 4);
  EXPECT_EQ(info[0].spill_load_bytes, 12);
  EXPECT_EQ(info[1].function, "k2");
  EXPECT_EQ(info[1].registers, 255);
  EXPECT_EQ(info[1].spill_store_bytes, 0);
}

TEST(RenderCuda, ACompileErrorCarriesNvrtcsLog) {
  absl::StatusOr<const Nvrtc*> nvrtc = Nvrtc::Load();
  if (!nvrtc.ok()) GTEST_SKIP() << "no NVRTC here: " << nvrtc.status().message();
  absl::StatusOr<Nvrtc::Binary> b = (*nvrtc)->Compile("int broken( {", 90, {});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("error"), std::string::npos) << b.status();
  EXPECT_NE(b.status().message().find("--gpu-architecture=sm_90"), std::string::npos) << b.status();
}

}  // namespace
}  // namespace uopc
