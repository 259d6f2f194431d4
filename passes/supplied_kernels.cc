#include "passes/supplied_kernels.h"

#include <algorithm>
#include <vector>

#include "core/bounds.h"
#include "core/matmul_call.h"
#include "core/substitute.h"
#include "core/symbolic/simplify.h"
#include "passes/lowered_steps.h"
#include "passes/scope.h"

namespace uopc {
namespace {

// An operand: a buffer read at an index, as f32.
struct Read {
  UOp buffer, index;
};

// LOAD(INDEX(BUFFER, i)), through a cast from a half to f32 or none.
std::optional<Read> ReadOf(const UOp& x) {
  UOp load = x;
  if (x.is(Ops::CAST)) {
    if (x.dtype() != DType::kF32 || !IsHalf(x.src(0).dtype())) return std::nullopt;
    load = x.src(0);
  } else if (x.dtype() != DType::kF32) {
    return std::nullopt;
  }
  if (!load.is(Ops::LOAD) || !load.src(0).is(Ops::INDEX) || !load.src(0).src(0).is(Ops::BUFFER))
    return std::nullopt;
  return Read{load.src(0).src(0), load.src(0).src(1)};
}

// An index as offset + sum of stride * loop, each stride a constant.
struct Affine {
  UOp offset;
  std::vector<int64_t> strides;  // along each loop
};

std::optional<Affine> AffineOf(const UOp& index, const std::vector<UOp>& loops) {
  Affine a;
  UOp rebuilt = UOp::Int(0);
  for (const UOp& r : loops) {
    std::optional<int64_t> s = StepAlong(index, r);
    if (!s) return std::nullopt;
    a.strides.push_back(*s);
    rebuilt = rebuilt + r * UOp::Int(*s);
  }
  a.offset = Simplify(RewriteNodes(index, [&](const UOp& o, const UOp& r) {
    return std::find(loops.begin(), loops.end(), o) != loops.end() ? UOp::Int(0) : r;
  }));
  if (Simplify(index - (a.offset + rebuilt)).ConstIntValue() != 0) return std::nullopt;
  for (const UOp& u : a.offset.Toposort())
    if (u.is(Ops::RANGE) || u.is(Ops::LOAD)) return std::nullopt;
  return a;
}

// A (rows x cols) operand with these strides in a layout BLAS takes.
bool BlasLayout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return (cs == 1 && (rows == 1 || rs >= cols)) || (rs == 1 && (cols == 1 || cs >= rows));
}

}  // namespace

std::optional<UOp> MatmulCallOf(const UOp& kernel, const Target& t) {
  if (std::none_of(t.kernels.begin(), t.kernels.end(),
                   [](const SuppliedKernel& k) { return k.op == "matmul"; }))
    return std::nullopt;
  const TopLoops top = TopLoopsOf(kernel);
  const UOp& store = top.statement;
  if (!store.is(Ops::STORE) || !store.src(0).is(Ops::INDEX) ||
      !store.src(0).src(0).is(Ops::BUFFER) || top.loops.size() < 2 || top.loops.size() > 3)
    return std::nullopt;
  const UOp out = store.src(0).src(0);
  UOp sum = store.src(1);
  if (sum.is(Ops::CAST) && IsHalf(sum.dtype()) && sum.dtype() == out.dtype()) sum = sum.src(0);
  if (!sum.is(Ops::REDUCE) || sum.src().size() != 2 || sum.dtype() != DType::kF32 ||
      sum.arg().Get<ReduceArg>().op != Ops::ADD || !sum.src(0).is(Ops::MUL) ||
      (out.dtype() == DType::kF32) != (sum == store.src(1)))
    return std::nullopt;
  std::optional<Read> x = ReadOf(sum.src(0).src(0)), y = ReadOf(sum.src(0).src(1));
  if (!x || !y || x->buffer == out || y->buffer == out) return std::nullopt;
  // loops: [batch,] rows, columns (out's), then the sum's
  std::vector<UOp> loops = top.loops;
  loops.push_back(sum.src(1));
  for (const UOp& r : loops)
    if (!r.is(Ops::RANGE)) return std::nullopt;
  const size_t nb = loops.size() - 3, I = nb, J = nb + 1, K = nb + 2;
  std::optional<Affine> o = AffineOf(store.src(0).src(1), loops), ax = AffineOf(x->index, loops),
                        ay = AffineOf(y->index, loops);
  if (!o || !ax || !ay || o->strides[J] != 1 || o->strides[K] != 0) return std::nullopt;
  // a reads rows and the sum (not columns), b the sum and columns (not rows)
  if (ax->strides[J] != 0) std::swap(x, y), std::swap(ax, ay);
  if (ax->strides[J] != 0 || ay->strides[I] != 0) return std::nullopt;
  auto len = [&](size_t l) { return VMax(loops[l].src(0)); };
  const int64_t m = len(I), n = len(J), k = len(K), batch = nb ? len(0) : 1;
  if (!BlasLayout(m, k, ax->strides[I], ax->strides[K]) ||
      !BlasLayout(k, n, ay->strides[K], ay->strides[J]) || (m > 1 && o->strides[I] < n))
    return std::nullopt;
  const int64_t flops = 2 * batch * m * n * k;
  const bool supplied =
      std::any_of(t.kernels.begin(), t.kernels.end(), [&](const SuppliedKernel& s) {
        return s.op == "matmul" && s.a == x->buffer.dtype() && s.b == y->buffer.dtype() &&
               s.out == out.dtype() && flops >= s.min_flops;
      });
  if (!supplied) return std::nullopt;
  auto c = [](int64_t v) { return UOp::Int(v); };
  auto batch_stride = [&](const Affine& a) { return nb ? a.strides[0] : 0; };
  std::vector<UOp> params = {nb ? loops[0].src(0) : c(1),
                             loops[I].src(0),
                             loops[J].src(0),
                             loops[K].src(0),
                             ax->offset,
                             c(batch_stride(*ax)),
                             c(ax->strides[I]),
                             c(ax->strides[K]),
                             ay->offset,
                             c(batch_stride(*ay)),
                             c(ay->strides[K]),
                             c(ay->strides[J]),
                             o->offset,
                             c(batch_stride(*o)),
                             c(o->strides[I])};
  return MatmulCall(out, x->buffer, y->buffer, params);
}

absl::StatusOr<UOp> SuppliedKernels(const UOp& lowered, const PassContext& ctx) {
  return MapKernels(lowered, "supplied_kernels", [&](const UOp& kernel) -> absl::StatusOr<UOp> {
    const Target& t = ctx.TargetOf(KernelDevice(kernel));
    return MatmulCallOf(kernel, t).value_or(kernel);
  });
}

}  // namespace uopc
