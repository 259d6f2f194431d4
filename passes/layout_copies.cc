#include "passes/layout_copies.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/bounds.h"
#include "core/placement.h"
#include "core/status_macros.h"
#include "core/substitute.h"
#include "core/verify.h"
#include "passes/cpu_opts.h"

namespace uopc {
namespace {

// A matrix whose rows a sum reads along their contiguous elements while the output runs
// across the rows (dY @ W^T in a backward pass): rangeify can only sum each output on its
// own, reading W by columns. Read instead from a transposed copy (a small kernel of its
// own), the output's loop runs along contiguous memory and gets a row of sums. The sums
// keep their order, so values do not change.
constexpr int64_t kTransposeRows = 16;  // fewer rows: not worth a copy

// The sizes of `s` that are not 1.
std::vector<int64_t> Sizes(const Shape& s) {
  std::vector<int64_t> out;
  for (const Dim& d : s) {
    if (!d.IsStatic()) return {-1};
    if (d.value() != 1) out.push_back(d.value());
  }
  return out;
}

// The rows of a matmul's output of these sizes (Sizes'): all but its last axis, leading
// axes being more rows (a batch of sequences times one weight); 0 where there are none.
int64_t OutputRows(const std::vector<int64_t>& sizes) {
  if (sizes.size() < 2 || sizes[0] < 0) return 0;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < sizes.size(); ++d) rows *= sizes[d];
  return rows;
}

// The register tile (rows, columns) of a matmul with an (..., m, n) output on `t` ({0, 0}:
// none).
std::pair<int64_t, int64_t> TileOf(const Shape& out, const Target& t) {
  const std::vector<int64_t> sizes = Sizes(out);
  const int64_t rows = OutputRows(sizes);
  if (rows == 0) return {0, 0};
  KernelLoops k{.outputs = {rows, sizes.back()},
                .reduction = {std::nullopt},
                .reduces = true,
                .matmul = true};
  std::pair<int64_t, int64_t> tile{0, 0};
  for (const Opt& o : CpuDefaultOpts(k, t))
    if (o.op == OptOp::kUpcast) (o.axis == 0 ? tile.first : tile.second) = o.amount;
  return tile;
}

// A cast between float dtypes (an operand rounded to a half as it is read, and back): it
// commutes with the views below it, so a copy of what it reads is read through it.
bool IsFloatCast(const UOp& x) {
  return x.is(Ops::CAST) && IsFloat(x.dtype()) && IsFloat(x.src(0).dtype());
}

// Whether the float casts from `value` down to `view` round to a half (autocast's f32
// weight read as bf16): on a CPU a software rounding, 6-8 integer ops an element.
bool RoundsToHalf(const UOp& value, const UOp& view) {
  for (UOp c = value; c != view; c = c.src(0))
    if (IsHalf(c.dtype()) && !IsHalf(c.src(0).dtype())) return true;
  return false;
}

// The view chain of `v` (EXPANDs, and RESHAPEs that only add or drop dims of 1; float
// casts) down to a view of a buffer as a (rows, columns) matrix: that view
// (RESHAPE(BUFFER)), or null.
UOp MatrixView(const UOp& v, const ShapeMap& shapes) {
  UOp x = v;
  while (x.is(Ops::EXPAND) || x.is(Ops::RESHAPE) || IsFloatCast(x)) {
    const UOp& in = x.src(0);
    if (IsFloatCast(x)) {
      x = in;
      continue;
    }
    if (x.is(Ops::RESHAPE) && in.is(Ops::BUFFER))
      return Sizes(shapes.at(x.get())).size() == 2 ? x : UOp();
    if (x.is(Ops::RESHAPE) && Sizes(shapes.at(x.get())) != Sizes(shapes.at(in.get()))) return UOp();
    x = in;
  }
  return UOp();
}

// `sum` with each EXPAND of its elementwise body replaced by `copy` of it (the view chain
// again, over a copy, or itself); what it reads through other nodes (the forward pass, say)
// stays as it is.
UOp ReadCopies(const UOp& sum, const std::function<UOp(const UOp&)>& copy) {
  absl::flat_hash_map<const UOp::Node*, UOp> body;
  std::function<UOp(const UOp&)> rebuild = [&](const UOp& x) -> UOp {
    if (auto it = body.find(x.get()); it != body.end()) return it->second;
    UOp out = x;
    if (IsAlu(x.op())) {
      std::vector<UOp> src;
      for (const UOp& s : x.src()) src.push_back(rebuild(s));
      out = x.WithSrc(src);
    } else if (x.is(Ops::EXPAND)) {
      out = copy(x);
    }
    return body[x.get()] = out;
  };
  return sum.WithSrc({rebuild(sum.src(0))});
}

// Down `x`'s view chain (EXPANDs, float casts, reshapes that keep its sizes) to a view of
// a buffer (RESHAPE(BUFFER)): that view, null where it reads something else. `value` is
// what a copy of it holds: the view, or the float casts right over it (a half read as f32,
// an f32 weight rounded to a half: autocast's), so that a copy is in f32, converted once
// rather than at every step of every row tile (a bf16 1024 matmul ran at 0.4x the f32 one).
struct ViewRead {
  UOp view, value;
};
ViewRead ViewUnder(const UOp& x, const ShapeMap& shapes) {
  UOp view = x, value;
  while (view.is(Ops::EXPAND) || IsFloatCast(view) ||
         (view.is(Ops::RESHAPE) && !view.src(0).is(Ops::BUFFER) &&
          Sizes(shapes.at(view.get())) == Sizes(shapes.at(view.src(0).get())))) {
    if (!IsFloatCast(view))
      value = UOp();
    else if (!value)
      value = view;  // (the outermost of a run of casts)
    view = view.src(0);
  }
  if (!view.is(Ops::RESHAPE) || !view.src(0).is(Ops::BUFFER)) return {};
  return {view, value ? value : view};
}

constexpr int64_t kPackedSteps = 64;       // a shorter sum: not worth a packed copy
constexpr int64_t kPackedRowBytes = 2048;  // rows closer: the prefetchers follow them

// Whether the k rows of a panel, `row_bytes` apart, fall in so few of the target's L1 sets
// that they do not stay in its ways from one row tile to the next: rows 2 KiB apart fill
// two sets of a 4 KiB set stride, 16 rows with 8 ways (a dim-128 GPT's x @ W, (128, 512),
// read its panel from L2 at every row tile: 16 GFLOP/s on an AMD EPYC where the packed 1024
// matmul ran at 30).
bool PanelMissesL1(int64_t k, int64_t row_bytes, const Target& t) {
  constexpr int64_t kLine = 64;
  const int64_t sets = t.L1SetStride() / kLine;
  if (sets <= 0 || row_bytes % kLine != 0) return false;
  return k > sets / std::gcd(row_bytes / kLine, sets) * t.l1d_ways;
}

// Whether a (k, n) matrix of `bytes`-wide elements is read from a copy packed in panels of a
// register tile's `columns`: its rows are long and it is larger than half the L2, or its
// panel does not stay in L1 and `row_tiles` read it (enough to pay for the copy).
constexpr int64_t kPanelReads = 8;
bool WorthPacking(int64_t k, int64_t n, int64_t bytes, int64_t columns, int64_t row_tiles,
                  const Target& t) {
  return columns >= 2 && n % columns == 0 &&
         ((n * bytes >= kPackedRowBytes && 2 * k * n * bytes > t.l2_bytes) ||
          (row_tiles >= kPanelReads && PanelMissesL1(k, n * bytes, t)));
}

// The row tiles of a matmul's output `out`: how often a panel of b is read.
int64_t RowTiles(const Shape& out, int64_t tile_rows) {
  return tile_rows > 0 ? OutputRows(Sizes(out)) / tile_rows : 0;
}

// A copy of `matrix`, (k, n), packed in panels of `columns`: (n / columns, k, columns), a
// step's columns adjacent and a panel front to back, as a BLAS packs b.
UOp PackedPanels(const UOp& matrix, int64_t k, int64_t n, int64_t columns,
                 const DeviceArg& device) {
  const UOp panels = UOp::Derived(
      Ops::PERMUTE,
      {UOp::Derived(Ops::RESHAPE, {matrix, UOp::Int(k), UOp::Int(n / columns), UOp::Int(columns)})},
      Axes{{1, 0, 2}});
  return UOp::Derived(Ops::STAGE, {panels}, device);
}

// A sum over the last axis of (..., m, n, k): each matrix it reads as (n, k) from its
// transposed copy, read back as (n, k). Where the copy's (k, n) rows are long and it is
// larger than half the L2 (as for ReadColumnsPacked below), the copy is packed in panels of
// the register tile's `columns` instead, (n / columns, k, columns): the dim-512 GPT's
// backward through a (2048, 512) weight read rows 8 KiB apart, in one L1 set, otherwise.
UOp ReadRowsTransposed(const UOp& sum, int n, const ShapeMap& shapes, int64_t columns,
                       const Target& target) {
  return ReadCopies(sum, [&](const UOp& x) {
    if (!shapes.contains(x.get())) return x;
    UOp view = MatrixView(x, shapes);
    const Shape& at = shapes.at(x.get());
    std::vector<int64_t> rc = view ? Sizes(shapes.at(view.get())) : std::vector<int64_t>{};
    if (!view || rc[0] < kTransposeRows || !at[n - 2].IsStatic() || !at[n - 1].IsStatic() ||
        at[n - 2].value() != rc[0] || at[n - 1].value() != rc[1])
      return x;
    // the float casts right over the view (an f32 weight rounded to a half) are applied to
    // the copy, once, instead of at every step of every row tile
    const ViewRead read = ViewUnder(x, shapes);
    const UOp value = read.view == view ? read.value : view;
    std::vector<DType> casts;
    for (UOp c = value; c != view; c = c.src(0)) casts.insert(casts.begin(), c.dtype());
    const UOp& buffer = view.src(0);
    UOp matrix = UOp::Derived(Ops::RESHAPE, {buffer, UOp::Int(rc[0]), UOp::Int(rc[1])});
    UOp transposed = UOp::Derived(Ops::PERMUTE, {matrix}, Axes{{1, 0}});
    for (DType d : casts) transposed = UOp::Make(Ops::CAST, d, {transposed});
    const DeviceArg device{buffer.arg().Get<ParamArg>().device};
    const int64_t rows = rc[0], k = rc[1], bytes = DTypeSize(transposed.dtype());
    UOp t;
    // (the copy is made anyway: packed, it costs no more)
    if (WorthPacking(k, rows, bytes, columns, kPanelReads, target)) {
      const UOp packed = PackedPanels(transposed, k, rows, columns, device);
      t = UOp::Derived(Ops::RESHAPE, {UOp::Derived(Ops::PERMUTE, {packed}, Axes{{0, 2, 1}}),
                                      UOp::Int(rows), UOp::Int(k)});
    } else {
      t = UOp::Derived(Ops::PERMUTE, {UOp::Derived(Ops::STAGE, {transposed}, device)},
                       Axes{{1, 0}});
    }
    std::vector<UOp> src(view.src().begin(), view.src().end());
    src[0] = t;
    const UOp copy = UOp::Derived(Ops::RESHAPE, src);
    return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == value ? copy : r; });
  });
}

// A sum over the middle axis of (..., m, k, n) (x @ W^T, W stored as (n, k): a head in
// PyTorch's layout, or tied to an embedding): a matrix it reads through a transpose runs
// by columns along the output's rows. It reads a transposed copy instead (a small kernel of
// its own), along contiguous memory; through the float casts right over or under the
// transpose (an f32 weight rounded to a half), which the copy applies once.
UOp ReadTransposesCopied(const UOp& sum, const ShapeMap& shapes) {
  return ReadCopies(sum, [&](const UOp& x) {
    if (!shapes.contains(x.get())) return x;
    UOp t = x, value;  // down the view chain to a PERMUTE of a (rows, columns) view of a buffer
    while (t.is(Ops::EXPAND) || IsFloatCast(t) ||
           (t.is(Ops::RESHAPE) && Sizes(shapes.at(t.get())) == Sizes(shapes.at(t.src(0).get())))) {
      if (!IsFloatCast(t))
        value = UOp();
      else if (!value)
        value = t;  // (the outermost of a run of casts)
      t = t.src(0);
    }
    if (!t.is(Ops::PERMUTE) || t.arg().Get<Axes>().v != std::vector<int>{1, 0}) return x;
    UOp view = t.src(0);  // (under casts too: autograd transposes a weight after rounding it)
    while (IsFloatCast(view)) view = view.src(0);
    if (!view.is(Ops::RESHAPE) || !view.src(0).is(Ops::BUFFER)) return x;
    std::vector<int64_t> rc = Sizes(shapes.at(view.get()));
    if (rc.size() != 2 || rc[0] < kTransposeRows) return x;
    if (!value) value = t;
    const UOp copy =
        UOp::Derived(Ops::STAGE, {value}, DeviceArg{view.src(0).arg().Get<ParamArg>().device});
    return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == value ? copy : r; });
  });
}

// The (k, n) view of a buffer that `x`, an operand of a sum over the middle axis of
// (..., m, k, n), broadcasts, with its sizes (ViewUnder); a null view where it reads
// something else.
struct MatrixOperand {
  UOp view, value;
  int64_t rows = 0, columns = 0;
};
MatrixOperand RightOperand(const UOp& x, const ShapeMap& shapes) {
  if (!shapes.contains(x.get())) return {};
  const ViewRead read = ViewUnder(x, shapes);
  if (!read.view) return {};
  const std::vector<int64_t> rc = Sizes(shapes.at(read.view.get()));
  const Shape& in = shapes.at(x.src(0).get());  // (what the EXPAND broadcasts: b's (k, n))
  const size_t d = in.size();
  if (rc.size() != 2 || d < 2 || !in[d - 2].IsStatic() || !in[d - 1].IsStatic() ||
      in[d - 2].value() != rc[0] || in[d - 1].value() != rc[1])
    return {};
  return {read.view, read.value, rc[0], rc[1]};
}

// A sum over the middle axis of (..., m, k, n) reading a, an (m, k) view of a buffer of
// halves converted to f32 as it is read (or of floats rounded to a half: autocast's
// activations): each row of a register tile converts its value
// at every step (a scalar conversion before each broadcast, as many as the FMAs it feeds).
// It reads an f32 copy instead, converted once (a small kernel of its own). With b's copy
// in f32 too (ReadColumnsPacked), a bf16 1024 matmul ran as fast as the f32 one on this
// Xeon (85-91 GFLOP/s, 54-58 before; 1 thread).
constexpr int64_t kWidenedElements = 1 << 16;  // fewer: not worth a kernel
UOp ReadLeftWidened(const UOp& sum, const ShapeMap& shapes) {
  return ReadCopies(sum, [&](const UOp& x) {
    if (!shapes.contains(x.get())) return x;
    const Shape& from = shapes.at(x.src(0).get());  // (..., m, k, 1): a
    if (from.size() < 3 || !from.back().IsStatic() || from.back().value() != 1) return x;
    const ViewRead read = ViewUnder(x, shapes);
    if (!read.view || read.value == read.view ||
        !(IsHalf(read.view.dtype()) || RoundsToHalf(read.value, read.view)))
      return x;
    const std::vector<int64_t> rc = Sizes(shapes.at(read.view.get()));
    if (rc.size() != 2 || rc[0] * rc[1] < kWidenedElements) return x;
    const UOp copy = UOp::Derived(Ops::STAGE, {read.value},
                                  DeviceArg{read.view.src(0).arg().Get<ParamArg>().device});
    return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == read.value ? copy : r; });
  });
}

// A sum over the middle axis of (..., m, k, n) reading b, a (k, n) view of a buffer,
// through a rounding to a half (autocast's f32 weight rounded to bf16, read as f32): each
// row tile rounds b again at every step, a software rounding of 6-8 integer ops an element
// on a CPU, as many as the FMAs of an 8-row tile (the bf16 GPT step's matmuls took twice
// their f32 time). With kWidenedRows rows or more it reads an f32 copy of the rounded
// values instead, rounded once (a small kernel of its own).
constexpr int64_t kWidenedRows = 64;  // fewer row tiles: the roundings cost less than a kernel
UOp ReadRightWidened(const UOp& sum, const ShapeMap& shapes) {
  return ReadCopies(sum, [&](const UOp& x) {
    const MatrixOperand b = RightOperand(x, shapes);
    if (!b.view || !RoundsToHalf(b.value, b.view)) return x;
    const Shape& at = shapes.at(x.get());  // (..., m, k, n)
    int64_t rows = 1;
    for (size_t d = 0; d + 2 < at.size(); ++d) rows = at[d].IsStatic() ? rows * at[d].value() : 0;
    if (rows < kWidenedRows) return x;
    const UOp copy =
        UOp::Derived(Ops::STAGE, {b.value}, DeviceArg{b.view.src(0).arg().Get<ParamArg>().device});
    return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == b.value ? copy : r; });
  });
}

// `x` reading `copy` (the elements of `view`, in their order) where it read `view`: the copy
// reshaped to the view's shape, at its rank.
UOp ReadFrom(const UOp& x, const UOp& view, const UOp& copy, const ShapeMap& shapes) {
  std::vector<UOp> back{copy};
  for (const Dim& dim : shapes.at(view.get())) back.push_back(dim.AsUOp());
  const UOp read = UOp::Derived(Ops::RESHAPE, back);
  return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == view ? read : r; });
}

// A sum over the middle axis of (..., m, k, n) reading b, a (k, n) view of a buffer whose
// rows lie a multiple of the L1's set stride apart (`stride`: its size over its ways, 4 KiB
// on the x86 cores measured; n = 1024 floats, 2048...): a block of b's columns, read by
// every row tile, falls in few cache sets, and is read again from memory for each (a 1024
// matmul ran at 130 GFLOP/s, 170 with rows 16 floats longer, on a Zen 5). It reads a copy
// whose rows are 16 elements longer instead (a small kernel of its own).
constexpr int64_t kPaddedRows = 64;  // fewer rows of b stay in cache anyway
UOp ReadRowsPadded(const UOp& sum, const ShapeMap& shapes, int64_t stride) {
  return ReadCopies(sum, [&](const UOp& x) {
    const MatrixOperand b = RightOperand(x, shapes);
    if (!b.view || b.rows < kPaddedRows || stride <= 0 ||
        b.columns * DTypeSize(b.view.dtype()) % stride != 0)
      return x;
    const UOp& buffer = b.view.src(0);
    const UOp matrix = UOp::Derived(Ops::RESHAPE, {buffer, UOp::Int(b.rows), UOp::Int(b.columns)});
    const UOp padded = UOp::Derived(
        Ops::STAGE,
        {UOp::Derived(Ops::PAD, {matrix, UOp::Int(0), UOp::Int(0), UOp::Int(0), UOp::Int(16)})},
        DeviceArg{buffer.arg().Get<ParamArg>().device});
    return ReadFrom(x, b.view,
                    UOp::Derived(Ops::SHRINK, {padded, UOp::Int(0), UOp::Int(b.rows), UOp::Int(0),
                                               UOp::Int(b.columns)}),
                    shapes);
  });
}

// A sum over the middle axis of (..., m, k, n) reading b, a (k, n) view of a buffer, whose
// panel (k rows of a register tile's columns) spans more memory than half the L2: each step
// reads the tile's columns from a new row, kilobytes past the last, and the panel's rows,
// read again for every row tile, lie on as many pages as it has rows (a 2048 matmul's on
// 2,048 pages of 8 KiB rows: more than the TLB holds, 0.5x OpenBLAS on this Xeon). It
// reads a copy packed in panels of the tile's columns instead, (n / columns, k, columns):
// a step's columns adjacent, a panel front to back, as a BLAS packs b. So does a smaller b
// whose panel does not stay in L1 from one of its `row_tiles` to the next (WorthPacking).
UOp ReadColumnsPacked(const UOp& sum, const ShapeMap& shapes, int64_t columns, int64_t row_tiles,
                      const Target& t) {
  return ReadCopies(sum, [&](const UOp& x) {
    const MatrixOperand b = RightOperand(x, shapes);
    const int64_t k = b.rows, n = b.columns;
    if (!b.view || !WorthPacking(k, n, DTypeSize(b.view.dtype()), columns, row_tiles, t)) return x;
    const UOp packed =
        PackedPanels(b.value, k, n, columns, DeviceArg{b.view.src(0).arg().Get<ParamArg>().device});
    return ReadFrom(x, b.value, UOp::Derived(Ops::PERMUTE, {packed}, Axes{{1, 0, 2}}), shapes);
  });
}

// A sum over the leading axes of (k..., m, n) (a weight's gradient X^T @ dY, summed over a
// batch's and a sequence's tokens) reads its operands, (k..., m) and (k..., n) values laid
// out row-major (buffers, or activations that kernelize stages), across their rows: each
// step of the sum reads the register tile's rows (or columns) from a new cache line, a row
// past the last. Rows 2 KiB apart or more the prefetchers do not follow, so such an operand
// is read from a copy packed in panels of the tile's rows (columns) instead, (m / rows, k,
// rows): a step's values adjacent, a panel read front to back, as a BLAS packs its
// operands. (On this Xeon the bench GPT's 512 x 1024 x 128 weight gradient took 4.1 ms in
// the step, packed 0.7 + 1.6 ms; with rows of 128 floats, 512 B apart, packing gained
// nothing.)
UOp ReadAcrossRowsPacked(const UOp& sum, const Shape& in, const ShapeMap& shapes,
                         const std::pair<int64_t, int64_t>& tile, const std::string& device) {
  // (in: the sum's operand's shape, (k..., m, n); tile: the register tile's rows, columns)
  const size_t n = in.size();
  int64_t steps = 1;
  for (size_t d = 0; d + 2 < n; ++d) steps *= in[d].value();
  if (steps < kPackedSteps) return sum;
  return ReadCopies(sum, [&](const UOp& x) {
    if (!shapes.contains(x.get())) return x;
    const Shape& from = shapes.at(x.src(0).get());  // (k..., m, 1) or (k..., 1, n)
    if (from.size() != n || Sizes(from).empty() || Sizes(from)[0] < 0) return x;
    const bool rows = from[n - 1].value() == 1;  // broadcast along n: read across m
    const size_t axis = rows ? n - 2 : n - 1;
    const int64_t len = from[axis].value(), panel = rows ? tile.first : tile.second;
    Shape keep(from.begin(), from.begin() + n - 2);
    keep.push_back(from[axis]);
    const std::vector<int64_t> want = Sizes(keep);  // (k..., m) or (k..., n)
    if (from[rows ? n - 1 : n - 2].value() != 1 || Sizes(from) != want || panel < 2 ||
        len % panel != 0 || len * DTypeSize(x.dtype()) < kPackedRowBytes)
      return x;
    UOp value = x.src(0);  // down the reshapes (of these sizes: the same row-major elements)
    while (IsFloatCast(value) ||
           (value.is(Ops::RESHAPE) && Sizes(shapes.at(value.src(0).get())) == want))
      value = value.src(0);
    const UOp panels = UOp::Derived(
        Ops::PERMUTE,
        {UOp::Derived(Ops::RESHAPE, {value, UOp::Int(steps), UOp::Int(len / panel), UOp::Int(panel)})},
        Axes{{1, 0, 2}});
    const UOp packed = UOp::Derived(Ops::STAGE, {panels}, DeviceArg{device});
    return ReadFrom(x, value, UOp::Derived(Ops::PERMUTE, {packed}, Axes{{1, 0, 2}}), shapes);
  });
}

// The dtype a product reads `x` in: a half converted to f32 as it is read counts as the half.
DType ReadDType(UOp x) {
  while (IsMovement(x.op())) x = x.src(0);
  return IsFloatCast(x) && x.dtype() == DType::kF32 && IsHalf(x.src(0).dtype()) ? x.src(0).dtype()
                                                                                : x.dtype();
}

// Whether `sum` (a sum of products over `in`, giving `out_dtype`) is a matmul that a kernel
// the target's plugin supplies takes (passes/supplied_kernels.h decides for good, on the
// kernel): its operands are left in their layout (the supplied kernel packs them itself),
// but for the roundings of f32 to a half, which it reads from a copy of the half (it reads
// halves from memory).
bool SuppliedMatmulTakes(const UOp& sum, const Shape& in, const Target& t) {
  const UOp& body = sum.src(0);
  if (!body.is(Ops::MUL) || t.kernels.empty()) return false;
  // (a symbolic size at its bound, as supplied_kernels measures it; saturating: a symbolic
  // size counted as 2^61 made the product overflow, and x @ W^T with a run-time row count
  // copied W transposed at every run)
  int64_t flops = 2;
  for (const Dim& d : in) {
    const int64_t v = d.IsStatic() ? d.value() : VMax(d.AsUOp());
    flops = v > 0 && flops > INT64_MAX / v ? INT64_MAX : flops * std::max<int64_t>(v, 0);
  }
  const DType a = ReadDType(body.src(0)), b = ReadDType(body.src(1));
  for (const SuppliedKernel& k : t.kernels)
    if (k.op == "matmul" && flops >= k.min_flops &&
        ((k.a == a && k.b == b) || (k.a == b && k.b == a)))
      return true;
  return false;
}

// The strides at which `x`, a chain of views (reshapes, permutes, expands, shrinks, float
// casts) over a value laid out row-major, reads its elements; nullopt where a reshape
// flattens axes that do not lie one after the other (a transposed view's), which a kernel
// indexes by division and remainder, or where a size is symbolic.
std::optional<std::vector<int64_t>> StridesOf(const UOp& x, const ShapeMap& shapes) {
  if (!shapes.contains(x.get())) return std::nullopt;
  const Shape& shape = shapes.at(x.get());
  std::vector<int64_t> size;
  for (const Dim& d : shape) {
    if (!d.IsStatic() || d.value() == 0) return std::nullopt;
    size.push_back(d.value());
  }
  const bool view = x.is(Ops::RESHAPE) || x.is(Ops::PERMUTE) || x.is(Ops::EXPAND) ||
                    x.is(Ops::SHRINK) || IsFloatCast(x);
  if (!view || (x.is(Ops::RESHAPE) && x.src(0).is(Ops::BUFFER))) {  // (row-major)
    std::vector<int64_t> stride(size.size(), 1);
    for (size_t d = size.size(); d-- > 1;) stride[d - 1] = stride[d] * size[d];
    return stride;
  }
  std::optional<std::vector<int64_t>> in = StridesOf(x.src(0), shapes);
  if (!in || IsFloatCast(x) || x.is(Ops::SHRINK)) return in;
  if (x.is(Ops::PERMUTE)) {
    std::vector<int64_t> out;
    for (int a : x.arg().Get<Axes>().v) out.push_back((*in)[a]);
    return out;
  }
  const Shape& from = shapes.at(x.src(0).get());
  if (x.is(Ops::EXPAND)) {
    for (size_t d = 0; d < size.size(); ++d)
      if (from[d].value() != size[d]) (*in)[d] = 0;
    return in;
  }
  // a reshape: each run of input axes that lie one after the other (a chunk) gives the
  // output axes that multiply to its length, or there are no strides
  std::vector<int64_t> out(size.size());
  int view_d = static_cast<int>(size.size()) - 1;
  int64_t base = in->empty() ? 1 : in->back(), chunk = 1, made = 1;
  for (int d = static_cast<int>(from.size()) - 1; d >= 0; --d) {
    chunk *= from[d].value();
    if (d == 0 || (from[d - 1].value() != 1 && (*in)[d - 1] != chunk * base)) {
      for (; view_d >= 0 && (made < chunk || size[view_d] == 1); --view_d) {
        out[view_d] = made * base;
        made *= size[view_d];
      }
      if (made != chunk) return std::nullopt;
      if (d > 0) base = (*in)[d - 1], chunk = 1, made = 1;
    }
  }
  for (; view_d >= 0; --view_d) out[view_d] = made * base;  // (trailing dims of 1)
  return out;
}

// Whether an operand of `sum`'s product is read through a reshape of a permuted view (what
// ReadFlattenedCopied looks at; the shapes it needs cost a walk of the graph below).
bool ReshapesAPermute(const UOp& sum) {
  for (const UOp& x : sum.src(0).src()) {
    bool reshaped = false;
    for (UOp u = x; IsMovement(u.op()) || IsFloatCast(u); u = u.src(0)) {
      if (reshaped && u.is(Ops::PERMUTE)) return true;
      reshaped = reshaped || u.is(Ops::RESHAPE);
    }
  }
  return false;
}

// `sum`, a matmul that a supplied kernel takes, reading each operand that a reshape
// flattens from a transposed view (an attention's heads, (B, H, T, D), as (B, T, H * D))
// from a copy of the view in its own order instead (a small kernel of its own): BLAS
// layouts are strided, and without the copy the matmul stayed generated code, indexing by
// division and remainder (the bench GPT's output projection and its weight's gradient,
// 0.57 ms each in a bf16 step on this Xeon).
UOp ReadFlattenedCopied(const UOp& sum, const ShapeMap& shapes, const std::string& device) {
  return ReadCopies(sum, [&](const UOp& x) {
    UOp flattened;  // the lowest reshape without strides over a view with them
    for (UOp u = x.src(0); u.is(Ops::RESHAPE) || u.is(Ops::PERMUTE) || u.is(Ops::EXPAND) ||
                           u.is(Ops::SHRINK) || IsFloatCast(u);
         u = u.src(0))
      if (u.is(Ops::RESHAPE) && !StridesOf(u, shapes) && StridesOf(u.src(0), shapes)) flattened = u;
    if (!flattened) return x;
    std::vector<UOp> casts;  // (a half widened above the view: the copy holds the half)
    UOp value = flattened.src(0);
    for (; IsFloatCast(value); value = value.src(0)) casts.push_back(value);
    // (a computed value under the view is staged as it is first, as kernelize would: the
    // copy is then a copy, not the value's kernel writing the view's order, which is no
    // BLAS layout's either: the heads' matmul stayed generated code)
    UOp base = value;
    while (IsMovement(base.op()) || IsFloatCast(base)) base = base.src(0);
    if (!base.is(Ops::BUFFER) && !base.is(Ops::STAGE)) {
      const UOp staged = UOp::Derived(Ops::STAGE, {base}, DeviceArg{device});
      value =
          RewriteNodes(value, [&](const UOp& o, const UOp& r) { return o == base ? staged : r; });
    }
    UOp copy = UOp::Derived(Ops::STAGE, {value}, DeviceArg{device});
    for (auto c = casts.rbegin(); c != casts.rend(); ++c) copy = c->WithSrc({copy});
    const UOp read = flattened.src(0);
    return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == read ? copy : r; });
  });
}

// The sum of `u` where `u` is a linear layer's output plus its bias (ADD of a sum, under
// reshapes, and a broadcast: an EXPAND of a smaller value), else null.
UOp BiasedSum(const UOp& u) {
  if (!u.is(Ops::ADD)) return UOp();
  for (int i : {0, 1}) {
    UOp sum = u.src(i);
    while (sum.is(Ops::RESHAPE)) sum = sum.src(0);
    if (sum.is(Ops::REDUCE) && u.src(1 - i).is(Ops::EXPAND)) return sum;
  }
  return UOp();
}

// `sum`, a matmul that a supplied kernel takes, reading a linear layer's f32 output plus its
// bias (an attention's q, k and v, under its views of the heads) from that value staged: a
// supplied kernel reads its operands from memory, and kernelize would add the bias inside
// the matmul's loops instead, which then stayed generated code (q . k^T of a dim-512 model
// at 25 GFLOP/s). The same f32 values, so the same sums.
UOp ReadBiasAddStaged(const UOp& sum, const std::string& device) {
  return ReadCopies(sum, [&](const UOp& x) {
    UOp base = x.src(0);  // (under views that add no elements: q, k and v are shrinks of it)
    while (base.is(Ops::RESHAPE) || base.is(Ops::PERMUTE) || base.is(Ops::SHRINK))
      base = base.src(0);
    const UOp sum = BiasedSum(base);
    if (!sum || base.dtype() != DType::kF32) return x;
    // (the sum staged too: left to kernelize, the biased value's one reader, the sum would
    // be computed inside its kernel, a matmul with an epilogue that no supplied kernel takes)
    const UOp sum_staged = UOp::Derived(Ops::STAGE, {sum}, DeviceArg{device});
    const UOp staged = UOp::Derived(
        Ops::STAGE,
        {RewriteNodes(base, [&](const UOp& o, const UOp& r) { return o == sum ? sum_staged : r; })},
        DeviceArg{device});
    return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == base ? staged : r; });
  });
}

// `sum` reading each f32 view that it rounds to a half from a copy of the half instead. The
// copy is made in the buffer's own order, and a transposed read (x @ W^T) transposes it.
UOp ReadHalvesStaged(const UOp& sum) {
  return ReadCopies(sum, [&](const UOp& x) {
    UOp half;  // the innermost rounding of f32 to a half under the read's view
    for (UOp u = x; u.is(Ops::EXPAND) || u.is(Ops::RESHAPE) || u.is(Ops::PERMUTE) || IsFloatCast(u);
         u = u.src(0))
      if (IsFloatCast(u) && IsHalf(u.dtype()) && !IsHalf(u.src(0).dtype())) half = u;
    if (!half) return x;
    std::vector<UOp> moves;  // between the rounding and the buffer's view
    UOp view = half.src(0);
    for (; view.is(Ops::PERMUTE) || (view.is(Ops::RESHAPE) && !view.src(0).is(Ops::BUFFER));
         view = view.src(0))
      moves.push_back(view);
    if (!view.is(Ops::RESHAPE) || !view.src(0).is(Ops::BUFFER)) return x;
    UOp copy = UOp::Derived(Ops::STAGE, {half.WithSrc({view})},
                            DeviceArg{view.src(0).arg().Get<ParamArg>().device});
    for (auto m = moves.rbegin(); m != moves.rend(); ++m)
      copy = UOp::Derived(m->op(), {copy}, m->arg());
    return RewriteNodes(x, [&](const UOp& o, const UOp& r) { return o == half ? copy : r; });
  });
}

}  // namespace

absl::StatusOr<UOp> LayoutCopies(const UOp& g, const PassContext& ctx) {
  ASSIGN_OR_RETURN(ShapeMap shapes, InferShapes(g));
  Placement place;
  return RewriteNodes(g, [&](const UOp& orig, const UOp& rebuilt) {
    if (!orig.is(Ops::REDUCE) || orig.arg().Get<ReduceArg>().op != Ops::ADD) return rebuilt;
    absl::StatusOr<std::string> device = place.Of(orig);
    const Target& t = ctx.TargetOf(device.ok() ? *device : "");
    if (!t.IsCpu()) return rebuilt;  // (a GPU's threads read across rows; no copies)
    const int n = static_cast<int>(shapes.at(orig.src(0).get()).size());
    const std::vector<int>& axes = orig.arg().Get<ReduceArg>().axes;
    std::vector<int> leading(std::max(n - 2, 0));
    for (int d = 0; d < n - 2; ++d) leading[d] = d;
    if (n >= 3 &&
        (axes == std::vector<int>{n - 2} || axes == std::vector<int>{n - 1} || axes == leading) &&
        SuppliedMatmulTakes(orig, shapes.at(orig.src(0).get()), t)) {
      UOp read = rebuilt;
      if (ReshapesAPermute(rebuilt)) {
        const std::string on = device.ok() ? *device : "";
        if (rebuilt == orig)
          read = ReadFlattenedCopied(rebuilt, shapes, on);
        else if (absl::StatusOr<ShapeMap> below = InferShapes(rebuilt); below.ok())
          read = ReadFlattenedCopied(rebuilt, *below, on);  // (copies made below: new shapes)
      }
      return ReadHalvesStaged(ReadBiasAddStaged(read, device.ok() ? *device : ""));
    }
    if (n >= 2 && axes == std::vector<int>{n - 1})
      return ReadRowsTransposed(rebuilt, n, shapes, TileOf(shapes.at(orig.get()), t).second, t);
    if (n >= 3 && axes == std::vector<int>{n - 2}) {
      const UOp read = ReadLeftWidened(ReadTransposesCopied(rebuilt, shapes), shapes);
      const std::pair<int64_t, int64_t> tile = TileOf(shapes.at(orig.get()), t);
      const UOp packed = ReadColumnsPacked(read, shapes, tile.second,
                                           RowTiles(shapes.at(orig.get()), tile.first), t);
      if (packed != read) return packed;  // (converted as it is packed)
      const UOp widened = ReadRightWidened(read, shapes);
      return widened != read ? widened : ReadRowsPadded(read, shapes, t.L1SetStride());
    }
    if (n >= 3 && axes == leading)
      if (const auto tile = TileOf(shapes.at(orig.get()), t); tile.first > 1) {
        // (its operands may hold copies made below: their shapes are the rebuilt graph's)
        absl::StatusOr<ShapeMap> below = InferShapes(rebuilt);
        if (below.ok())
          return ReadAcrossRowsPacked(rebuilt, shapes.at(orig.src(0).get()), *below, tile,
                                      device.ok() ? *device : "");
      }
    return rebuilt;
  });
}

}  // namespace uopc
