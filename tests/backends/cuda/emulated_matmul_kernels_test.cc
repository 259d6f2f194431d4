// The CUDA plugin's own matmul kernels, run on the CPU by the emulator (cp.async stages,
// ldmatrix and mma.sync fragments, grid and block as the GPU gets them): every variant, both
// tile shapes, ragged edges, unaligned operands and batches, bit for bit against the sum in
// order of p with one rounding a product (what the kernels compute: an f32 fma a step, or
// half products, exact in f32, added in slices of 16).
#include "backends/cuda/emulated_matmul_kernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "backends/cuda/matmul_kernels.h"
#include "core/float16.h"

namespace uopc::cuda {
namespace {

struct Kernel {
  const char* name;
  DType in, out;
};
constexpr Kernel kKernels[] = {
    {"cuda_sgemm", DType::kF32, DType::kF32},
    {"cuda_mma_bf16_to_f32", DType::kBF16, DType::kF32},
    {"cuda_mma_bf16_to_bf16", DType::kBF16, DType::kBF16},
    {"cuda_mma_f16_to_f32", DType::kF16, DType::kF32},
    {"cuda_mma_f16_to_f16", DType::kF16, DType::kF16},
};

// elements in `dtype`'s bits, from floats
std::vector<uint8_t> Encode(DType dtype, const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * DTypeSize(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(&out[4 * i], &v[i], 4);
      continue;
    }
    const uint16_t h = dtype == DType::kF16 ? F32ToF16(v[i]) : F32ToBF16(v[i]);
    std::memcpy(&out[2 * i], &h, 2);
  }
  return out;
}

float Decode(DType dtype, const std::vector<uint8_t>& bytes, int64_t i) {
  if (dtype == DType::kF32) {
    float f;
    std::memcpy(&f, &bytes[4 * i], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &bytes[2 * i], 2);
  return dtype == DType::kF16 ? F16ToF32(h) : BF16ToF32(h);
}

// (m, k) @ (k, n), batch x batch2 of them, a and b transposed or not, each operand `shift`
// elements past an aligned start (odd: cp.async's element-by-element path)
MatmulParams Call(int64_t m, int64_t n, int64_t k, bool at, bool bt, int64_t shift,
                  int64_t batch = 1, int64_t batch2 = 1) {
  MatmulParams p;
  p.batch = batch, p.batch2 = batch2, p.m = m, p.n = n, p.k = k;
  p.a_offset = p.b_offset = shift, p.out_offset = shift;
  p.a_row = at ? 1 : k, p.a_col = at ? m : 1;
  p.b_row = bt ? 1 : n, p.b_col = bt ? k : 1;
  p.out_row = n + 3;  // (rows padded: the kernel must leave the padding alone)
  p.a_batch = m * k, p.b_batch = k * n, p.out_batch = m * p.out_row;
  p.a_batch2 = batch * p.a_batch, p.b_batch2 = batch * p.b_batch,
  p.out_batch2 = batch * p.out_batch;
  return p;
}

// "" when kernel `k` (its launch for `multiprocessors`, tiles `shape`) gives the exact
// in-order sum on every output and leaves the rest of out alone, else the first difference
std::string Check(const Kernel& k, const MatmulParams& p, int multiprocessors,
                  const std::string& shape) {
  const int64_t last = p.batch * p.batch2 - 1;
  const int64_t a_count = p.AOffset(last) + p.a_batch + 8,
                b_count = p.BOffset(last) + p.b_batch + 8;
  const int64_t out_count = p.OutOffset(last) + p.out_batch + 8;
  std::mt19937 rng(static_cast<uint32_t>(p.m * 31 + p.n * 7 + p.k));
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> av(a_count), bv(b_count), ov(out_count, 7.0f);
  for (float& x : av) x = u(rng);
  for (float& x : bv) x = u(rng);
  std::vector<uint8_t> a = Encode(k.in, av), b = Encode(k.in, bv), out = Encode(k.out, ov);
  const std::vector<uint8_t> before = out;
  const absl::Status s =
      RunEmulatedMatmul(k.name, p, multiprocessors, out.data(), a.data(), b.data(), nullptr, shape);
  if (!s.ok()) return s.ToString();
  std::vector<bool> written(out_count, false);
  for (int64_t z = 0; z <= last; ++z)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        float acc = 0;
        for (int64_t q = 0; q < p.k; ++q)
          acc = std::fma(Decode(k.in, a, p.AOffset(z) + i * p.a_row + q * p.a_col),
                         Decode(k.in, b, p.BOffset(z) + q * p.b_row + j * p.b_col), acc);
        const int64_t o = p.OutOffset(z) + i * p.out_row + j;
        const float want = Decode(k.out, Encode(k.out, {acc}), 0), got = Decode(k.out, out, o);
        written[o] = true;
        if (std::memcmp(&want, &got, 4) != 0)
          return absl::StrCat("out[", z, "][", i, "][", j, "] = ", got, ", the in-order sum ",
                              want);
      }
  const int64_t size = DTypeSize(k.out);
  for (int64_t o = 0; o < out_count; ++o)
    if (!written[o] && std::memcmp(&out[o * size], &before[o * size], size) != 0)
      return absl::StrCat("wrote out element ", o, ", which no output is");
  return "";
}

TEST(EmulatedMatmulKernels, EveryVariantAndTileShapeGivesTheInOrderSum) {
  for (const Kernel& k : kKernels)
    for (bool at : {false, true})
      for (bool bt : {false, true}) {
        // sgemm: 128 x 128 tiles on one multiprocessor, 64 x 64 on 132; mma: both shapes
        const bool half = k.in != DType::kF32;
        for (const std::string shape : {"n128", "n256"}) {
          const int mps = half ? 132 : shape == "n128" ? 1 : 132;
          // two row tiles, a ragged column tile, slices of 32 (or 8) and a ragged last one
          const MatmulParams p = Call(136, 136, 72, at, bt, 0);
          EXPECT_EQ(Check(k, p, mps, half ? shape : ""), "")
              << k.name << " " << shape << " at " << at << " bt " << bt;
        }
      }
}

TEST(EmulatedMatmulKernels, UnalignedOperandsBatchesAndTinySums) {
  for (const Kernel& k : kKernels) {
    // an odd shift: no 16-byte copy lines up, so every slice goes element by element
    EXPECT_EQ(Check(k, Call(40, 24, 40, false, true, 1), 132, ""), "") << k.name;
    // 2 x 3 matmuls in z, a sum shorter than a slice
    EXPECT_EQ(Check(k, Call(33, 17, 5, true, false, 0, 2, 3), 132, ""), "") << k.name;
    // a sum of one
    EXPECT_EQ(Check(k, Call(20, 9, 1, false, false, 0), 132, ""), "") << k.name;
  }
}

TEST(EmulatedMatmulKernels, TheLaunchIsThePlannersAndUnknownNamesAreRefused) {
  std::vector<float> x(64 * 64);
  const MatmulParams p = Call(64, 64, 64, false, false, 0);
  const absl::Status s =
      RunEmulatedMatmul("cuda_hgemm", p, 132, x.data(), x.data(), x.data(), nullptr, "");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(RunEmulatedMatmul("cuda_mma_bf16_to_f32", p, 132, x.data(), x.data(), x.data(), nullptr,
                              "n64")
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace uopc::cuda
