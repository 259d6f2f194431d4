// An f32 matmul for x86-64 CPUs with AVX2 and FMA (and no AVX-512, where the generated
// kernels' wider register tiles do as well): the supplied kernel `avx2_sgemm`
// (backends/c/matmul_kernels.h). The classic blocking: k in blocks whose panel of b (16
// columns) stays in L1, a's rows in blocks that stay in L2, both packed (or read where they
// lie, where too few tiles would reuse a packed copy), and a register tile of 6 rows x 16
// columns (12 of the 16 vector registers accumulate). A generated kernel has
// no tile of 12 accumulators that divides a power of two (6 x 16, 4 x 24), nor k-blocking:
// it reached half of OpenBLAS's speed on an AMD EPYC (Zen 3).
// Each output sums its products in order of p, one rounding a step (fma), from 0: the bits
// of the generated kernels on such a CPU (MULACC) and of the interpreter. bf16 operands are
// converted to f32 as they are packed (exactly), and a bf16 out is each f32 sum rounded once
// to nearest even: the bits of the generated bf16 matmul, which converts, sums in f32 and
// rounds at its store.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

#include "backends/c/packed_b_cache.h"
#include "core/matmul_call.h"

namespace uopc::cpu {

/// out = a @ b for the call `p` (checked against its buffers by the caller), on the threads of
/// backends/c/thread_pool.h; blocks sized for these caches (a core's L1 data and L2). a and b
/// are f32, or bf16 where `bf16_in`; out f32, or bf16 where `bf16_out`. b's packed copy is
/// kept for later calls with the same `b_version` (backends/c/packed_b_cache.h).
absl::Status RunAvx2Sgemm(const MatmulParams& p, void* out, bool bf16_out, const void* a,
                          const void* b, bool bf16_in, BufferVersion b_version, int64_t l1d_bytes,
                          int64_t l2_bytes);

}  // namespace uopc::cpu
