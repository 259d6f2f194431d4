// Target: what a kernel is compiled for, as the device's plugin describes it (ABI 1.4's
// backend_target; devices/device.h reads it): the device class, the ISA features, the
// vector width and registers, the caches and cores, and for a GPU the warp, the threads and
// shared memory of a block and its matrix units. The lowering passes read it (through
// PassContext::TargetOf) instead of constants measured on one machine; every cache of
// kernels, plans or search choices keys on its text form.
//
// The text form is one line of key=value words, every key of the class, which ParseTarget
// reads back (this machine's, and an H200's):
//   class=cpu arch=x86_64 features=avx,avx2,avx512f,...,fma vector_bits=512 registers=32
//   cores=2 l1d=32K/8 l2=1M l3=32M matrix=
//   class=gpu arch=sm_90 features= registers=255 cores=132 l1d=0/0 l2=50M l3=0 warp=32
//   threads_per_block=1024 shared_per_block=227K matrix=16x8x16:f16->f32,16x8x16:bf16->f32
// A plugin that supplies whole-op kernels adds kernels=NAME:OP:A*B->OUT:MIN_FLOPS,... (left
// out when there are none). Sizes take K, M or G (powers of 1024); l1d is SIZE/WAYS; lists
// are comma-separated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/dtype.h"

namespace uopc {

enum class TargetClass : uint8_t { kCpu = 1, kGpu = 2 };

/// One shape of a matrix unit's multiply-accumulate: (m x k) times (k x n) of `input`,
/// accumulated in `accumulator` (a tensor core's mma.sync, an AMX tile op).
struct MatrixUnit {
  int m = 0, n = 0, k = 0;
  DType input = DType::kF16, accumulator = DType::kF32;
  bool operator==(const MatrixUnit&) const = default;
};

/// A kernel the device's plugin supplies for a whole op (ABI 2.1's uopc_kernel_desc): the
/// lowering calls it (passes/supplied_kernels.h) where an op of the graph is `op` on these
/// dtypes and at least `min_flops` of work.
struct SuppliedKernel {
  std::string name;  // "openblas_sgemm"
  std::string op;    // "matmul"
  DType a = DType::kF32, b = DType::kF32, out = DType::kF32;
  int64_t min_flops = 0;
  bool operator==(const SuppliedKernel&) const = default;
};

struct Target {
  TargetClass device_class = TargetClass::kCpu;
  std::string arch = "x86_64";          // "x86_64", "aarch64", "sm_90"
  std::vector<std::string> features;    // sorted: "avx2", "avx512_bf16", "amx_tile", ...
  int vector_bits = 128;                // a vector register's width (CPU)
  int registers = 16;                   // vector registers (CPU); 32-bit registers a thread (GPU)
  int cores = 1;                        // cores (CPU) or multiprocessors (GPU)
  int64_t l1d_bytes = 32 << 10;         // per core
  int l1d_ways = 8;
  int64_t l2_bytes = 256 << 10;         // per core (CPU); the whole chip's (GPU)
  int64_t l3_bytes = 0;                 // shared
  // GPU only (0 on a CPU)
  int warp = 0;
  int threads_per_block = 0;
  int64_t shared_per_block = 0;         // bytes a block may use
  std::vector<MatrixUnit> matrix_units;
  std::vector<SuppliedKernel> kernels;  // whole-op kernels of the plugin (any class)

  bool operator==(const Target&) const = default;

  bool IsCpu() const { return device_class == TargetClass::kCpu; }
  bool IsGpu() const { return device_class == TargetClass::kGpu; }
  /// Whether `feature` ("avx512f") is among the features.
  bool Has(absl::string_view feature) const;
  /// Whether it multiplies and adds in one instruction, rounding once (fma: every GPU; a CPU
  /// with the fma feature): where it does, sums of products are MULACCs.
  bool FusesMultiplyAdd() const { return IsGpu() || Has("fma"); }
  /// Elements of `t` in one vector register (1 when the target has no vectors).
  int Lanes(DType t) const;
  /// Bytes between addresses that fall in the same L1 set (size / ways; 4096 on every x86
  /// core these machines have had).
  int64_t L1SetStride() const { return l1d_ways > 0 ? l1d_bytes / l1d_ways : 0; }
  /// The text form (one line, which ParseTarget reads back); what caches key on.
  std::string ToString() const;

  /// x86-64-v4 (AVX-512: 512-bit vectors, 32 registers, a 48 KiB 12-way L1): the target
  /// of a graph lowered without devices (tests, tools) and of a CPU plugin older than 1.4.
  static Target ReferenceCpu();
  /// A GPU that every CUDA device is at least: sm_50, warp 32, 1024 threads and 48 KiB of
  /// shared memory a block, no matrix units (a GPU plugin older than 1.4).
  static Target ReferenceGpu();
};

/// The inverse of Target::ToString. Unknown keys, bad numbers and missing class are
/// InvalidArgument naming the word; keys left out keep the class's reference value.
absl::StatusOr<Target> ParseTarget(absl::string_view text);

/// "openblas_sgemm:matmul:f32*f32->f32:65536"; ParseSuppliedKernel reads it back.
std::string SuppliedKernelToString(const SuppliedKernel& k);
absl::StatusOr<SuppliedKernel> ParseSuppliedKernel(absl::string_view text);

/// "16x8x16:f16->f32"; ParseMatrixUnit reads it back.
std::string MatrixUnitToString(const MatrixUnit& u);
absl::StatusOr<MatrixUnit> ParseMatrixUnit(absl::string_view text);

}  // namespace uopc
