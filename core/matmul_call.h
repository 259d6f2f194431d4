// A matmul call: the loop-level MATMUL node that passes/supplied_kernels.h puts in place of
// a generated matmul kernel when the device's plugin supplies a kernel for it (ABI 2.1's
// uopc_kernel_desc, op "matmul"), defined once here: its sources, what its params mean, the
// check a launch makes before the plugin reads a byte, and the reference result.
//
//   MATMUL(BUFFER out, BUFFER a, BUFFER b, batch, m, n, k,
//          a_offset, a_batch, a_row, a_col, b_offset, b_batch, b_row, b_col,
//          out_offset, out_batch, out_row, batch2, a_batch2, b_batch2, out_batch2)
//
// out[y][z][i][j] = sum over p < k of a[y][z][i][p] * b[y][z][p][j] (y < batch2, z < batch,
// i < m, j < n), each element at offset + y * batch2 stride + z * batch stride + row * row
// stride + column * column stride (out's column stride is 1): a second, outer batch for the
// (sequence, head) pairs of attention. The params are index expressions (CONSTs, and VARs for
// symbolic shapes), evaluated at launch. Products and sums are f32, rounded once to out's dtype;
// the reference sums in order of p, and a supplied kernel may sum in any order (a vendor's kernel
// blocks the sum; a matrix unit's accumulation is its own), so results agree within f32 rounding of
// the sum.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "core/interpreter.h"
#include "core/uop.h"

namespace uopc {

/// The params of a matmul call, in the order of its sources (and of kernel_launch's); a
/// list of 15 leaves the second batch out (one).
struct MatmulParams {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t a_offset = 0, a_batch = 0, a_row = 0, a_col = 0;
  int64_t b_offset = 0, b_batch = 0, b_row = 0, b_col = 0;
  int64_t out_offset = 0, out_batch = 0, out_row = 0;
  int64_t batch2 = 1, a_batch2 = 0, b_batch2 = 0, out_batch2 = 0;
  static constexpr int kCount = 19;
  std::array<int64_t, kCount> Values() const;
  static MatmulParams FromValues(const std::array<int64_t, kCount>& v);
  int64_t Flops() const { return 2 * batch2 * batch * m * n * k; }
  /// The offsets of matmul `z` of the batch2 x batch ones (z = y * batch + the inner index).
  int64_t AOffset(int64_t z) const { return a_offset + z / batch * a_batch2 + z % batch * a_batch; }
  int64_t BOffset(int64_t z) const { return b_offset + z / batch * b_batch2 + z % batch * b_batch; }
  int64_t OutOffset(int64_t z) const {
    return out_offset + z / batch * out_batch2 + z % batch * out_batch;
  }
  /// Whether a kernel reads a along its unit stride on i (a transposed, as BLAS says) rather
  /// than on p; where a's other axis has length 1 (so its stride may be anything), the way
  /// that reads it right.
  bool ATransposed() const { return a_col != 1 && (a_row == 1 || m == 1); }
  /// Whether a kernel reads b along its unit stride on p (b transposed) rather than on j.
  bool BTransposed() const { return b_col != 1 && (b_row == 1 || k == 1); }
  /// "batch 1, (64, 32) @ (32, 48)", for messages.
  std::string ToString() const;
};

/// MATMUL(out, a, b, params...): `params` in MatmulParams' order, as index expressions.
UOp MatmulCall(const UOp& out, const UOp& a, const UOp& b, absl::Span<const UOp> params);

/// The params of call `matmul` with its VARs set by name; InvalidArgument for a value that
/// cannot be computed (a VAR without a value).
absl::StatusOr<MatmulParams> EvalMatmulParams(
    const UOp& matmul, const absl::flat_hash_map<std::string, int64_t>& vars);

/// OK when every element the call reads or writes lies inside buffers of these element
/// counts, the sizes are not negative, a and b each have a stride of 1 along one of their
/// axes, and out's rows do not overlap; else OutOfRange or InvalidArgument naming the
/// operand. What a launch checks before a plugin's kernel runs.
absl::Status CheckMatmul(const MatmulParams& p, int64_t out_count, int64_t a_count,
                         int64_t b_count);

/// The params of a launch (`values`: kCount of them) checked against its buffers (out, a, b:
/// `bytes` past their offsets, of these element dtypes), as CheckMatmul: what a plugin's
/// kernel_launch checks before its kernel reads a byte.
absl::StatusOr<MatmulParams> CheckedMatmulLaunch(absl::Span<const int64_t> values,
                                                 const std::array<DType, 3>& dtypes,
                                                 const std::array<uint64_t, 3>& bytes);

/// The reference result (the interpreter's): f32 products summed in order of p, rounded to
/// out's dtype. The buffers' dtypes are f32, f16 or bf16.
absl::Status RunMatmulReference(const MatmulParams& p, const BufferRef& out, const BufferRef& a,
                                const BufferRef& b);

}  // namespace uopc
