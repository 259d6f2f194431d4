// CUDA C++ kernels on the CPU: blocks, barriers, shared memory, and the warp instructions
// by the PTX ISA's fragment layouts, each checked against what a GPU computes (an ldmatrix
// and mma.sync pair multiplies matrices), and the rules whose breach would hang a GPU or be
// undefined there, refused naming the thread.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "backends/cuda/cuda_on_cpu.h"
#include "core/float16.h"

namespace uopc::cuda {
namespace {

// ---- the kernels, written as for NVRTC ----

// sums of 256 floats a block, in shared memory (a tree, a barrier a level)
extern "C" __global__ void BlockSums(float* out, const float* in) {
  __shared__ float s[256];
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned h = 128; h > 0; h /= 2) {
    if (t < h) s[t] += s[t + h];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
UOPC_ENTRY(BlockSums)

// the threads below `split` wait at a barrier; the others of their warp, at an ldmatrix
extern "C" __global__ void BarrierInAWarp(int split) {
  unsigned r[4];
  if (threadIdx.x < (unsigned)split)
    __syncthreads();
  else
    LdMatrixX4<false>(r[0], r[1], r[2], r[3], DynamicShared() + threadIdx.x % 8 * 16);
}
UOPC_ENTRY(BarrierInAWarp)

// threads that exit before a barrier the others reach (allowed: exited threads have come)
extern "C" __global__ void ExitBeforeBarrier(int* out) {
  if (threadIdx.x % 2) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}
UOPC_ENTRY(ExitBeforeBarrier)

// A (16 x 16, row-major) times B (16 x 8, row-major) in bf16 or f16 bits, f32 out (16 x 8),
// as a tensor-core kernel does it: both staged in dynamic shared memory, A's fragments by
// ldmatrix, B's by ldmatrix.trans, one mma.sync. `pad` elements between the staged rows.
template <bool kF16>
__device__ void OneMma(float* out, const uint16_t* a, const uint16_t* b, int pad) {
  uint16_t* As = reinterpret_cast<uint16_t*>(DynamicShared());
  uint16_t* Bs = As + 16 * (16 + pad);
  const int lane = threadIdx.x, g = lane / 4, c = lane % 4, q8 = lane / 8, r8 = lane % 8;
  for (int e = lane; e < 256; e += 32) As[e / 16 * (16 + pad) + e % 16] = a[e];
  for (int e = lane; e < 128; e += 32) Bs[e / 8 * (8 + pad) + e % 8] = b[e];
  __syncthreads();
  unsigned fa[4], fb[4];
  // matrices: rows 0-7 / 8-15 of columns 0-7, then of columns 8-15
  LdMatrixX4<false>(fa[0], fa[1], fa[2], fa[3], As + (r8 + q8 % 2 * 8) * (16 + pad) + q8 / 2 * 8);
  // B's rows 0-7, 8-15 (and again: the x4 takes four), transposed
  LdMatrixX4<true>(fb[0], fb[1], fb[2], fb[3], Bs + (r8 + q8 % 2 * 8) * (8 + pad));
  float d[4] = {0, 0, 0, 0};
  Mma16816<kF16>(d, fa, fb[0], fb[1]);
  for (int h = 0; h < 2; ++h)
    for (int e = 0; e < 2; ++e) out[(g + 8 * h) * 8 + 2 * c + e] = d[2 * h + e];
}
extern "C" __global__ void OneMmaBf16(float* out, const uint16_t* a, const uint16_t* b, int pad) {
  OneMma<false>(out, a, b, pad);
}
UOPC_ENTRY(OneMmaBf16)
extern "C" __global__ void OneMmaF16(float* out, const uint16_t* a, const uint16_t* b, int pad) {
  OneMma<true>(out, a, b, pad);
}
UOPC_ENTRY(OneMmaF16)

// lane l of the warp gets ldmatrix's registers for four matrices whose element (r, c) of
// matrix i is i * 64 + r * 8 + c
template <bool kTrans>
__device__ void Fragments(unsigned* out) {
  uint16_t* s = reinterpret_cast<uint16_t*>(DynamicShared());
  const int lane = threadIdx.x;
  for (int e = lane; e < 256; e += 32) s[e] = e;
  __syncthreads();
  LdMatrixX4<kTrans>(out[4 * lane], out[4 * lane + 1], out[4 * lane + 2], out[4 * lane + 3],
                     s + lane * 8);
}
extern "C" __global__ void FragmentsOf(unsigned* out) { Fragments<false>(out); }
UOPC_ENTRY(FragmentsOf)
extern "C" __global__ void TransposedFragmentsOf(unsigned* out) { Fragments<true>(out); }
UOPC_ENTRY(TransposedFragmentsOf)

// lanes below `split` do an mma.sync; the others, an ldmatrix
extern "C" __global__ void DivergentWarp(int split) {
  unsigned r[4] = {0, 0, 0, 0};
  float d[4] = {0, 0, 0, 0};
  if (threadIdx.x < (unsigned)split)
    Mma16816<false>(d, r, 0, 0);
  else
    LdMatrixX4<false>(r[0], r[1], r[2], r[3], DynamicShared() + threadIdx.x % 8 * 16);
}
UOPC_ENTRY(DivergentWarp)

// lane `bad` gives an address 8 bytes into its row
extern "C" __global__ void MisalignedRow(int bad) {
  unsigned r[4];
  LdMatrixX4<false>(r[0], r[1], r[2], r[3],
                    DynamicShared() + threadIdx.x * 16 + ((int)threadIdx.x == bad ? 8 : 0));
}
UOPC_ENTRY(MisalignedRow)

// cp.async's 16 bytes, read before and after the thread waits for them
extern "C" __global__ void AsyncCopy(float* out, const float* in) {
  float* s = reinterpret_cast<float*>(DynamicShared());
  CpAsync16(s, in);
  CpAsyncCommit();
  out[0] = s[0];  // (not waited for: a race on a GPU; here, the bytes from before)
  CpAsyncWait<0>();
  out[1] = s[0];
}
UOPC_ENTRY(AsyncCopy)

// thread 5 throws (as an allocation that fails would)
extern "C" __global__ void Throws() {
  if (threadIdx.x == 5) throw std::runtime_error("boom");
  __syncthreads();
}
UOPC_ENTRY(Throws)

// ---- the tests ----

template <typename... A>
absl::Status Start(const char* name, emu::Dim3 grid, emu::Dim3 block, uint32_t shared, A... args) {
  void* params[] = {&args...};
  return emu::Launch(name, emu::FindKernel(name), grid, block, shared, params);
}

TEST(CudaEmulator, BlocksShareMemoryAndWaitAtBarriers) {
  std::vector<float> in(4 * 256), out(4);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 256);
  ASSERT_TRUE(
      Start("BlockSums", {4, 1, 1}, {256, 1, 1}, 0, out.data(), (const float*)in.data()).ok());
  for (float x : out) EXPECT_EQ(x, 255 * 256 / 2);
  // the same on a pool of CPU threads
  void* params[] = {nullptr, nullptr};
  float* o = out.data();
  const float* i = in.data();
  params[0] = &o, params[1] = &i;
  out.assign(4, 0);
  emu::ParallelFor parallel = [](int n, const std::function<void(int)>& body) {
    std::vector<std::thread> threads;
    for (int c = 0; c < n; ++c) threads.emplace_back(body, c);
    for (std::thread& t : threads) t.join();
  };
  ASSERT_TRUE(emu::Launch("BlockSums", emu::FindKernel("BlockSums"), {4, 1, 1}, {256, 1, 1}, 0,
                          params, parallel)
                  .ok());
  for (float x : out) EXPECT_EQ(x, 255 * 256 / 2);
}

TEST(CudaEmulator, AThreadThatExitsCountsAsComeToTheBarrier) {
  std::vector<int> out(64, 0);
  ASSERT_TRUE(Start("ExitBeforeBarrier", {1, 1, 1}, {64, 1, 1}, 0, out.data()).ok());
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], t % 2 ? 0 : 1) << t;
}

TEST(CudaEmulator, ABarrierThatSomeThreadsNeverReachIsAHangRefused) {
  const absl::Status s = Start("BarrierInAWarp", {2, 1, 1}, {64, 1, 1}, 128, 10);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "BarrierInAWarp: block (0, 0, 0): no thread can go on (a hang on a GPU): 10 wait at "
            "__syncthreads (thread (0, 0, 0)); 22 wait at a warp instruction (thread (10, 0, 0) "
            "at ldmatrix.x4 in warp 0) that not all 32 of its lanes reach; 32 have exited "
            "(thread (32, 0, 0))");
}

TEST(CudaEmulator, LdmatrixGivesEachLaneItsPieceOfFourMatrices) {
  // PTX ISA: lane l holds (l / 4, 2 (l % 4)) and the next element of each matrix, low half
  // first; .trans, those of the transpose
  std::vector<unsigned> rows(128), cols(128);
  ASSERT_TRUE(Start("FragmentsOf", {1, 1, 1}, {32, 1, 1}, 512, rows.data()).ok());
  ASSERT_TRUE(Start("TransposedFragmentsOf", {1, 1, 1}, {32, 1, 1}, 512, cols.data()).ok());
  auto element = [](int i, int r, int c) { return unsigned(i * 64 + r * 8 + c); };
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      const int g = l / 4, c = l % 4;
      EXPECT_EQ(rows[4 * l + i], element(i, g, 2 * c) | element(i, g, 2 * c + 1) << 16) << l;
      EXPECT_EQ(cols[4 * l + i], element(i, 2 * c, g) | element(i, 2 * c + 1, g) << 16) << l;
    }
  EXPECT_EQ(rows[4 * 5 + 2], (128u + 8 + 2) | (128u + 8 + 3) << 16);  // lane 5, matrix 2
}

template <bool kF16>
void ExpectOneMmaMultiplies(const char* kernel) {
  // A and B of small integers over 8 (exact in bf16 and f16, and their sums in f32)
  std::vector<uint16_t> a(256), b(128);
  std::vector<float> av(256), bv(128), out(128, -1);
  for (int e = 0; e < 256; ++e) av[e] = static_cast<float>((e * 7 + 3) % 17 - 8) / 8;
  for (int e = 0; e < 128; ++e) bv[e] = static_cast<float>((e * 5 + 1) % 13 - 6) / 8;
  for (int e = 0; e < 256; ++e) a[e] = kF16 ? F32ToF16(av[e]) : F32ToBF16(av[e]);
  for (int e = 0; e < 128; ++e) b[e] = kF16 ? F32ToF16(bv[e]) : F32ToBF16(bv[e]);
  for (int pad : {0, 8}) {
    const uint32_t shared = (16 * (16 + pad) + 16 * (8 + pad)) * 2;
    ASSERT_TRUE(Start(kernel, {1, 1, 1}, {32, 1, 1}, shared, out.data(), (const uint16_t*)a.data(),
                      (const uint16_t*)b.data(), pad)
                    .ok());
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        float want = 0;
        for (int k = 0; k < 16; ++k) want += av[i * 16 + k] * bv[k * 8 + j];
        EXPECT_EQ(out[i * 8 + j], want)
            << kernel << " pad " << pad << " D(" << i << ", " << j << ")";
      }
  }
}

TEST(CudaEmulator, LdmatrixAndMmaSyncMultiplyAsTheIsaLaysOutTheirFragments) {
  ExpectOneMmaMultiplies<false>("OneMmaBf16");
  ExpectOneMmaMultiplies<true>("OneMmaF16");
}

TEST(CudaEmulator, LanesOfAWarpAtDifferentInstructionsAreRefused) {
  const absl::Status s = Start("DivergentWarp", {1, 1, 1}, {64, 1, 1}, 128, 40);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("the lanes of warp 1 execute different warp instructions (lane 0: "
                             "mma.sync.m16n8k16.bf16; lane 31: ldmatrix.x4)"),
            std::string::npos)
      << s;
  // a warp of fewer than 32 threads
  const absl::Status partial = Start("DivergentWarp", {1, 1, 1}, {48, 1, 1}, 128, 0);
  EXPECT_NE(partial.message().find("which has fewer than 32 threads"), std::string::npos)
      << partial;
}

TEST(CudaEmulator, AMisalignedOrOutOfRangeRowIsRefusedNamingTheLane) {
  absl::Status s = Start("MisalignedRow", {1, 1, 1}, {32, 1, 1}, 512, 3);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("ldmatrix.x4: lane 3's row: shared memory at byte 56 is not "
                             "aligned to 16"),
            std::string::npos)
      << s;
  s = Start("MisalignedRow", {1, 1, 1}, {32, 1, 1}, 256, -1);  // (rows 16 to 31 lie past it)
  EXPECT_NE(s.message().find("lane 16's row: 16 bytes at byte 256 of the block's dynamic shared "
                             "memory, which has 256"),
            std::string::npos)
      << s;
}

TEST(CudaEmulator, AnAsyncCopyLandsWhenItsThreadWaits) {
  const float in[4] = {1, 2, 3, 4};
  alignas(16) float src[4];
  std::copy(in, in + 4, src);
  float out[2] = {0, 0};
  ASSERT_TRUE(Start("AsyncCopy", {1, 1, 1}, {1, 1, 1}, 16, out, (const float*)src).ok());
  EXPECT_TRUE(std::isnan(out[0]));  // (shared memory starts as 0xff bytes)
  EXPECT_EQ(out[1], 1.0f);
  // a misaligned global address
  const absl::Status s = Start("AsyncCopy", {1, 1, 1}, {1, 1, 1}, 16, out, (const float*)src + 1);
  EXPECT_NE(s.message().find("cp.async: global address 0x"), std::string::npos) << s;
}

TEST(CudaEmulator, AnExceptionInAThreadEndsTheLaunchNamingIt) {
  const absl::Status s = Start("Throws", {1, 1, 1}, {32, 1, 1}, 0);
  EXPECT_EQ(s.message(), "Throws: block (0, 0, 0), thread (5, 0, 0): boom");
}

TEST(CudaEmulator, ALaunchOfNoThreadsOrTooManyIsRefused) {
  EXPECT_EQ(Start("BarrierInAWarp", {1, 1, 1}, {1025, 1, 1}, 0, 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(emu::Launch("none", nullptr, {1, 1, 1}, {1, 1, 1}, 0, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Start("BarrierInAWarp", {0, 1, 1}, {32, 1, 1}, 0, 0).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace uopc::cuda
