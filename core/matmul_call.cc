#include "core/matmul_call.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

#include "core/float16.h"
#include "core/kernel_signature.h"
#include "core/status_macros.h"

namespace uopc {
namespace {

float Read(const BufferRef& r, int64_t i) {
  switch (r.dtype) {
    case DType::kF16: return F16ToF32(static_cast<const uint16_t*>(r.data)[i]);
    case DType::kBF16: return BF16ToF32(static_cast<const uint16_t*>(r.data)[i]);
    default: return static_cast<const float*>(r.data)[i];
  }
}

void Write(const BufferRef& r, int64_t i, float v) {
  switch (r.dtype) {
    case DType::kF16: static_cast<uint16_t*>(r.data)[i] = F32ToF16(v); break;
    case DType::kBF16: static_cast<uint16_t*>(r.data)[i] = F32ToBF16(v); break;
    default: static_cast<float*>(r.data)[i] = v; break;
  }
}

// The lowest and highest element an operand's (batch2, batch, rows, columns) view touches.
struct Extent {
  int64_t lo = 0, hi = 0;
};
Extent ExtentOf(int64_t offset, std::array<int64_t, 4> len, std::array<int64_t, 4> stride) {
  Extent e{offset, offset};
  for (int d = 0; d < 4; ++d) {
    const int64_t reach = (len[d] - 1) * stride[d];
    (reach < 0 ? e.lo : e.hi) += reach;
  }
  return e;
}

}  // namespace

std::array<int64_t, MatmulParams::kCount> MatmulParams::Values() const {
  return {batch,   m,        n,        k,        a_offset,  a_batch,    a_row,
          a_col,   b_offset, b_batch,  b_row,    b_col,     out_offset, out_batch,
          out_row, batch2,   a_batch2, b_batch2, out_batch2};
}

MatmulParams MatmulParams::FromValues(const std::array<int64_t, kCount>& v) {
  return {v[0],  v[1],  v[2],  v[3],  v[4],  v[5],  v[6],  v[7],  v[8], v[9],
          v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17], v[18]};
}

std::string MatmulParams::ToString() const {
  return absl::StrCat("batch ", batch2 > 1 ? absl::StrCat(batch2, " x ") : "", batch, ", (", m,
                      ", ", k, ") @ (", k, ", ", n, ")");
}

UOp MatmulCall(const UOp& out, const UOp& a, const UOp& b, absl::Span<const UOp> params) {
  std::vector<UOp> src = {out, a, b};
  src.insert(src.end(), params.begin(), params.end());
  return UOp::Make(Ops::MATMUL, DType::kVoid, std::move(src));
}

absl::StatusOr<MatmulParams> EvalMatmulParams(
    const UOp& matmul, const absl::flat_hash_map<std::string, int64_t>& vars) {
  if (!matmul.is(Ops::MATMUL) || matmul.src().size() != 3 + MatmulParams::kCount)
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul call: expected MATMUL with 3 buffers and ", MatmulParams::kCount, " params"));
  std::array<int64_t, MatmulParams::kCount> v{};
  for (int i = 0; i < MatmulParams::kCount; ++i) {
    std::optional<int64_t> x = EvalIndex(matmul.src(3 + i), vars);
    if (!x)
      return absl::InvalidArgumentError(
          absl::StrCat("matmul call: param ", i, " has no value (a VAR without a value?)"));
    v[i] = *x;
  }
  return MatmulParams::FromValues(v);
}

absl::Status CheckMatmul(const MatmulParams& p, int64_t out_count, int64_t a_count,
                         int64_t b_count) {
  const auto what = [&p] { return p.ToString(); };  // (for a message: not made on success)
  if (p.batch2 < 0 || p.batch < 0 || p.m < 0 || p.n < 0 || p.k < 0)
    return absl::InvalidArgumentError(absl::StrCat("matmul call: negative size in ", what()));
  if (p.batch2 == 0 || p.batch == 0 || p.m == 0 || p.n == 0) return absl::OkStatus();
  // a length-1 axis has any stride
  if (p.a_row != 1 && p.a_col != 1 && p.m > 1 && p.k > 1)
    return absl::InvalidArgumentError(absl::StrCat("matmul call ", what(), ": a has strides (",
                                                   p.a_row, ", ", p.a_col, "), neither 1"));
  if (p.b_row != 1 && p.b_col != 1 && p.k > 1 && p.n > 1)
    return absl::InvalidArgumentError(absl::StrCat("matmul call ", what(), ": b has strides (",
                                                   p.b_row, ", ", p.b_col, "), neither 1"));
  const int64_t one = (p.m - 1) * p.out_row + p.n;  // the elements one matmul of out spans
  if ((p.m > 1 && p.out_row < p.n) || (p.batch > 1 && p.out_batch < one) ||
      (p.batch2 > 1 && p.out_batch2 < (p.batch - 1) * p.out_batch + one))
    return absl::InvalidArgumentError(
        absl::StrCat("matmul call ", what(), ": out's elements overlap (row stride ", p.out_row,
                     ", batch strides ", p.out_batch, " and ", p.out_batch2, ")"));
  struct Operand {
    const char* name;
    Extent e;
    int64_t count;
  } ops[] = {
      {"out",
       ExtentOf(p.out_offset, {p.batch2, p.batch, p.m, p.n},
                {p.out_batch2, p.out_batch, p.out_row, 1}),
       out_count},
      {"a",
       ExtentOf(p.a_offset, {p.batch2, p.batch, p.m, p.k},
                {p.a_batch2, p.a_batch, p.a_row, p.a_col}),
       a_count},
      {"b",
       ExtentOf(p.b_offset, {p.batch2, p.batch, p.k, p.n},
                {p.b_batch2, p.b_batch, p.b_row, p.b_col}),
       b_count},
  };
  for (const Operand& o : ops) {
    if (p.k == 0 && o.name[0] != 'o') continue;
    if (o.e.lo < 0 || o.e.hi >= o.count)
      return absl::OutOfRangeError(absl::StrCat("matmul call ", what(), ": ", o.name,
                                                " reaches elements [", o.e.lo, ", ", o.e.hi,
                                                "] of a buffer of ", o.count));
  }
  return absl::OkStatus();
}

absl::StatusOr<MatmulParams> CheckedMatmulLaunch(absl::Span<const int64_t> values,
                                                 const std::array<DType, 3>& dtypes,
                                                 const std::array<uint64_t, 3>& bytes) {
  if (values.size() != MatmulParams::kCount)
    return absl::InvalidArgumentError(
        absl::StrCat("matmul call: ", values.size(), " params; expected ", MatmulParams::kCount));
  std::array<int64_t, MatmulParams::kCount> v;
  std::copy(values.begin(), values.end(), v.begin());
  const MatmulParams p = MatmulParams::FromValues(v);
  int64_t counts[3];
  for (int i = 0; i < 3; ++i) counts[i] = static_cast<int64_t>(bytes[i] / DTypeSize(dtypes[i]));
  RETURN_IF_ERROR(CheckMatmul(p, counts[0], counts[1], counts[2]));
  return p;
}

absl::Status RunMatmulReference(const MatmulParams& p, const BufferRef& out, const BufferRef& a,
                                const BufferRef& b) {
  RETURN_IF_ERROR(CheckMatmul(p, out.count, a.count, b.count));
  for (const BufferRef* r : {&out, &a, &b})
    if (r->dtype != DType::kF32 && r->dtype != DType::kF16 && r->dtype != DType::kBF16)
      return absl::InvalidArgumentError(
          absl::StrCat("matmul call: ", DTypeName(r->dtype), " is not f32, f16 or bf16"));
  for (int64_t z = 0; z < p.batch2 * p.batch; ++z)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        float acc = 0.0f;
        for (int64_t q = 0; q < p.k; ++q)
          acc += Read(a, p.AOffset(z) + i * p.a_row + q * p.a_col) *
                 Read(b, p.BOffset(z) + q * p.b_row + j * p.b_col);
        Write(out, p.OutOffset(z) + i * p.out_row + j, acc);
      }
  return absl::OkStatus();
}

}  // namespace uopc
