#include "passes/supplied_kernels.h"

#include <algorithm>
#include <array>
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

// A loop of the matmul: its length, and how far out, a and b move along it.
struct Axis {
  UOp end;
  std::array<int64_t, 3> stride;
};

// `axes` (outermost first) with each pair of adjacent ones that every operand walks as one
// (the outer's stride the inner's times its length) merged into one.
std::vector<Axis> Merged(const std::vector<Axis>& axes) {
  std::vector<Axis> out;
  for (const Axis& inner : axes) {
    const std::optional<int64_t> len = inner.end.ConstIntValue();
    bool one = !out.empty() && len;
    for (int op = 0; one && op < 3; ++op) one = out.back().stride[op] == inner.stride[op] * *len;
    if (one)
      out.back() = {Simplify(out.back().end * inner.end), inner.stride};
    else
      out.push_back(inner);
  }
  return out;
}

}  // namespace

std::optional<UOp> MatmulCallOf(const UOp& kernel, const Target& t) {
  if (std::none_of(t.kernels.begin(), t.kernels.end(),
                   [](const SuppliedKernel& k) { return k.op == "matmul"; }))
    return std::nullopt;
  const TopLoops top = TopLoopsOf(kernel);
  const UOp& store = top.statement;
  if (!store.is(Ops::STORE) || !store.src(0).is(Ops::INDEX) ||
      !store.src(0).src(0).is(Ops::BUFFER) || top.loops.size() < 2)
    return std::nullopt;
  const UOp out = store.src(0).src(0);
  UOp sum = store.src(1);
  if (sum.is(Ops::CAST) && IsHalf(sum.dtype()) && sum.dtype() == out.dtype()) sum = sum.src(0);
  if (!sum.is(Ops::REDUCE) || sum.src().size() < 2 || sum.dtype() != DType::kF32 ||
      sum.arg().Get<ReduceArg>().op != Ops::ADD || !sum.src(0).is(Ops::MUL) ||
      (out.dtype() == DType::kF32) != (sum == store.src(1)))
    return std::nullopt;
  std::optional<Read> x = ReadOf(sum.src(0).src(0)), y = ReadOf(sum.src(0).src(1));
  if (!x || !y || x->buffer == out || y->buffer == out) return std::nullopt;
  // loops: out's (batch..., rows, columns), then the sum's
  std::vector<UOp> loops = top.loops;
  const size_t num_out = loops.size();
  loops.insert(loops.end(), sum.src().begin() + 1, sum.src().end());
  for (const UOp& r : loops)
    if (!r.is(Ops::RANGE)) return std::nullopt;
  std::optional<Affine> o = AffineOf(store.src(0).src(1), loops), ax = AffineOf(x->index, loops),
                        ay = AffineOf(y->index, loops);
  if (!o || !ax || !ay) return std::nullopt;
  // adjacent loops that every operand walks as one (the outer's stride the inner's times its
  // length) become one: the batch's (B, heads), the sum's (a weight gradient's B, T)
  std::vector<Axis> axes;
  for (size_t l = 0; l < loops.size(); ++l)
    axes.push_back({loops[l].src(0), {o->strides[l], ax->strides[l], ay->strides[l]}});
  const std::vector<Axis> batch = Merged({axes.begin(), axes.begin() + num_out - 2}),
                          sums = Merged({axes.begin() + num_out, axes.end()});
  if (batch.size() > 2 || sums.size() != 1) return std::nullopt;
  const Axis &rows = axes[num_out - 2], &cols = axes[num_out - 1], &red = sums[0];
  const Axis one{UOp::Int(1), {0, 0, 0}};
  const Axis& bat = batch.empty() ? one : batch.back();        // the inner batch
  const Axis& bat2 = batch.size() == 2 ? batch.front() : one;  // (sequences around heads)
  enum { kOut, kA, kB };
  if (cols.stride[kOut] != 1 || red.stride[kOut] != 0) return std::nullopt;
  // a reads rows and the sum (not columns), b the sum and columns (not rows)
  std::array<int, 3> order = {kOut, kA, kB};
  if (cols.stride[kA] != 0) std::swap(x, y), std::swap(ax, ay), std::swap(order[1], order[2]);
  const int A = order[1], B = order[2];
  if (cols.stride[A] != 0 || rows.stride[B] != 0) return std::nullopt;
  const int64_t m = VMax(rows.end), n = VMax(cols.end), k = VMax(red.end),
                b = VMax(bat.end) * VMax(bat2.end);
  if (!BlasLayout(m, k, rows.stride[A], red.stride[A]) ||
      !BlasLayout(k, n, red.stride[B], cols.stride[B]) || (m > 1 && rows.stride[kOut] < n))
    return std::nullopt;
  const int64_t flops = 2 * b * m * n * k;
  const bool supplied =
      std::any_of(t.kernels.begin(), t.kernels.end(), [&](const SuppliedKernel& s) {
        return s.op == "matmul" && s.a == x->buffer.dtype() && s.b == y->buffer.dtype() &&
               s.out == out.dtype() && flops >= s.min_flops;
      });
  if (!supplied) return std::nullopt;
  auto c = [](int64_t v) { return UOp::Int(v); };
  std::vector<UOp> params = {bat.end,
                             rows.end,
                             cols.end,
                             red.end,
                             ax->offset,
                             c(bat.stride[A]),
                             c(rows.stride[A]),
                             c(red.stride[A]),
                             ay->offset,
                             c(bat.stride[B]),
                             c(red.stride[B]),
                             c(cols.stride[B]),
                             o->offset,
                             c(bat.stride[kOut]),
                             c(rows.stride[kOut]),
                             bat2.end,
                             c(bat2.stride[A]),
                             c(bat2.stride[B]),
                             c(bat2.stride[kOut])};
  return MatmulCall(out, x->buffer, y->buffer, params);
}

absl::StatusOr<UOp> SuppliedKernels(const UOp& lowered, const PassContext& ctx) {
  return MapKernels(lowered, "supplied_kernels", [&](const UOp& kernel) -> absl::StatusOr<UOp> {
    const Target& t = ctx.TargetOf(KernelDevice(kernel));
    return MatmulCallOf(kernel, t).value_or(kernel);
  });
}

}  // namespace uopc
