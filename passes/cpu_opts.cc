#include "passes/cpu_opts.h"

#include <algorithm>

namespace uopc {
namespace {

// The shortest block of a longer row that the defaults take.
constexpr int64_t kMinGroupColumns = 16;
// Output rows whose rows of sums the defaults compute together.
constexpr int64_t kGroupRows = 4;
// Rows summed along memory (a layer norm's, a softmax's) that the defaults sum together:
// at each step gcc vectorizes their values along the row and adds them to 4 independent
// chains. A wide row of such sums reads across rows, a gather per vector: a layer norm's
// backward sum over 1024 rows of 128 took 370 us that way, 40 us 4 rows at a time (Zen 3,
// the same bits).
constexpr int64_t kRowChains = 4;

// A tile of outputs (rows x column vectors) whose sums a matmul keeps in registers for its
// whole reduction: per step, one read of the tile's columns of b serves every row. The
// first that fits the target's registers (its sums, a row of b and a broadcast of a) and
// divides the kernel's rows and columns is the default; gcc vectorizes the columns.
// Ordered by speed on a 1024 matmul with AVX-512 (Zen 5, 16 floats a vector): 8 x 3
// vectors (8 x 48) holds 24 accumulator registers and reached about 170 GFLOP/s, the
// row-of-sums form about 90. With AVX2 (16 registers of 8 floats) the ones that fit are
// 4 x 24, 4 x 16 and 6 x 16 (the classic 6 x 16 AVX2 kernel; not measured here).
struct RegisterTile {
  int64_t rows, vectors;
};
constexpr RegisterTile kRegisterTiles[] = {{8, 3}, {6, 4}, {8, 2}, {4, 4},
                                           {4, 3}, {4, 2}, {6, 2}};

bool Fits(const RegisterTile& tile, const Target& t) {
  return tile.rows * tile.vectors + tile.vectors + 1 <= t.registers;
}

}  // namespace

int64_t CpuMaxRegisterTile(const Target& t) {
  return int64_t{t.registers} * t.Lanes(DType::kF32);
}

int64_t CpuMaxGroupColumns(const Target& t) {
  const int64_t floats = t.l1d_bytes / 4 / (kGroupRows * 4);
  int64_t p = kMinGroupColumns;
  while (p * 2 <= floats) p *= 2;
  return p;
}

std::vector<Opt> CpuDefaultOpts(const KernelLoops& k, const Target& t) {
  const int last = static_cast<int>(k.outputs.size()) - 1;
  if (!k.reduces || last < 0 || !k.outputs[last] || *k.outputs[last] < 2) return {};
  const int64_t n = *k.outputs[last], lanes = t.Lanes(DType::kF32);
  if (const std::optional<int64_t> m = last >= 1 ? k.outputs[last - 1] : std::nullopt;
      k.matmul && m)
    for (const RegisterTile& tile : kRegisterTiles)
      if (Fits(tile, t) && *m % tile.rows == 0 && n % (tile.vectors * lanes) == 0)
        return {{OptOp::kUpcast, last - 1, tile.rows},
                {OptOp::kUpcast, last, tile.vectors * lanes}};
  if (k.sums_rows) {
    for (int64_t c = kRowChains; c >= 2; c /= 2)
      if (n % c == 0) return {{OptOp::kGroup, last, c}};
    return {};
  }
  // a row of sums: the whole loop, or the largest block of it (a power of two) that fits;
  // where none divides it (GPT-2's 50,257 = 29 x 1,733 tokens), its largest divisor that
  // fits (else every sum would read its own column, one float of each cache line)
  const int64_t max_columns = CpuMaxGroupColumns(t);
  int64_t block = n;
  if (n > max_columns)
    for (block = max_columns; block >= kMinGroupColumns && n % block != 0;) block /= 2;
  if (n > max_columns && block < kMinGroupColumns)
    for (block = max_columns; block >= kMinGroupColumns && n % block != 0;) --block;
  if (n > max_columns && block < kMinGroupColumns) return {};
  std::vector<Opt> opts{{OptOp::kGroup, last, block}};
  if (last >= 1 && k.outputs[last - 1] && *k.outputs[last - 1] % kGroupRows == 0 &&
      *k.outputs[last - 1] > kGroupRows)
    opts.insert(opts.begin(), {OptOp::kGroup, last - 1, kGroupRows});
  return opts;
}

std::vector<Opt> CpuOptActions(const KernelLoops& k, const Target& t) {
  const int last = static_cast<int>(k.outputs.size()) - 1;
  std::vector<Opt> actions;
  if (!k.reduces || last < 0 || !k.outputs[last]) return actions;
  auto add = [&](OptOp op, int axis, std::initializer_list<int64_t> amounts) {
    if (axis < 0 || !k.outputs[axis]) return;
    for (int64_t a : amounts)
      if (a >= 2 && a <= *k.outputs[axis] && *k.outputs[axis] % a == 0)
        actions.push_back({op, axis, a});
  };
  const int64_t lanes = t.Lanes(DType::kF32);
  if (k.matmul) {
    add(OptOp::kUpcast, last, {lanes, 2 * lanes, 3 * lanes, 4 * lanes});
    add(OptOp::kUpcast, last - 1, {4, 6, 8});
  }
  // rows of 4 where the sums read along memory, 16, 64, 128, ... up to the longest, and the
  // whole row
  std::vector<int64_t> columns;
  if (k.sums_rows) columns.push_back(kRowChains);
  for (int64_t c = 16; c <= CpuMaxGroupColumns(t); c *= c < 64 ? 4 : 2) columns.push_back(c);
  for (int64_t c : columns) add(OptOp::kGroup, last, {c});
  if (const int64_t n = *k.outputs[last];
      n <= CpuMaxGroupColumns(t) && std::find(columns.begin(), columns.end(), n) == columns.end())
    add(OptOp::kGroup, last, {n});
  add(OptOp::kGroup, last - 1, {2, 4, 8});
  std::vector<Opt> unrolls = UnrollActions(k);
  actions.insert(actions.end(), unrolls.begin(), unrolls.end());
  return actions;
}

}  // namespace uopc
