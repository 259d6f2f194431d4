#include "passes/opts.h"

#include "absl/strings/str_cat.h"

namespace uopc {
namespace {

// The longest row of sums computed at once (an array of accumulators on the stack).
constexpr int64_t kMaxGroupColumns = 512;
// The shortest block of a longer row that the defaults take.
constexpr int64_t kMinGroupColumns = 16;
// Output rows whose rows of sums the defaults compute together.
constexpr int64_t kGroupRows = 4;
// The most sums an upcast holds in registers (32 vector registers of 16 floats).
constexpr int64_t kMaxRegisterTile = 512;

// A tile of outputs (rows x columns) whose sums a matmul keeps in registers for its whole
// reduction: per step, one read of the tile's columns of b serves every row. The first that
// divides the kernel's rows and columns is the default; gcc vectorizes the columns (16 floats
// a register). Ordered by speed on a 1024 matmul (AVX-512, Zen 5): 8 x 48 holds 24
// accumulator registers and reaches about 170 GFLOP/s; the row-of-sums form, about 90.
struct RegisterTile {
  int64_t rows, columns;
};
constexpr RegisterTile kRegisterTiles[] = {{8, 48}, {6, 64}, {8, 32}, {4, 64}, {4, 48}, {4, 32}};

}  // namespace

std::vector<Opt> DefaultOpts(const KernelLoops& k) {
  const int last = static_cast<int>(k.outputs.size()) - 1;
  if (!k.reduces || last < 0 || !k.outputs[last] || *k.outputs[last] < 2) return {};
  const int64_t n = *k.outputs[last];
  if (const std::optional<int64_t> m = last >= 1 ? k.outputs[last - 1] : std::nullopt;
      k.matmul && m)
    for (const RegisterTile& t : kRegisterTiles)
      if (*m % t.rows == 0 && n % t.columns == 0)
        return {{OptOp::kUpcast, last - 1, t.rows}, {OptOp::kUpcast, last, t.columns}};
  // a row of sums: the whole loop, or the largest block of it (a power of two) that fits
  int64_t block = n;
  if (n > kMaxGroupColumns)
    for (block = kMaxGroupColumns; block >= kMinGroupColumns && n % block != 0;) block /= 2;
  if (n > kMaxGroupColumns && block < kMinGroupColumns) return {};
  std::vector<Opt> opts{{OptOp::kGroup, last, block}};
  if (last >= 1 && k.outputs[last - 1] && *k.outputs[last - 1] % kGroupRows == 0 &&
      *k.outputs[last - 1] > kGroupRows)
    opts.insert(opts.begin(), {OptOp::kGroup, last - 1, kGroupRows});
  return opts;
}

std::vector<Opt> OptActions(const KernelLoops& k) {
  const int last = static_cast<int>(k.outputs.size()) - 1;
  std::vector<Opt> actions;
  if (!k.reduces || last < 0 || !k.outputs[last]) return actions;
  auto add = [&](OptOp op, int axis, std::initializer_list<int64_t> amounts) {
    if (axis < 0 || !k.outputs[axis]) return;
    for (int64_t a : amounts)
      if (a >= 2 && a <= *k.outputs[axis] && *k.outputs[axis] % a == 0)
        actions.push_back({op, axis, a});
  };
  if (k.matmul) {
    add(OptOp::kUpcast, last, {16, 32, 48, 64});
    add(OptOp::kUpcast, last - 1, {4, 6, 8});
  }
  add(OptOp::kGroup, last, {16, 64, 128, 256, 512});
  if (const int64_t n = *k.outputs[last];
      n <= kMaxGroupColumns && n != 16 && n != 64 && n != 128 && n != 256 && n != 512)
    add(OptOp::kGroup, last, {n});  // (the whole row)
  add(OptOp::kGroup, last - 1, {2, 4, 8});
  for (int a = 0; a < static_cast<int>(k.reduction.size()); ++a)
    if (k.reduction[a])
      for (int64_t u : {4, 8})
        if (u < *k.reduction[a] && *k.reduction[a] % u == 0)
          actions.push_back({OptOp::kUnroll, a, u});
  return actions;
}

absl::StatusOr<LoopSplits> SplitsOf(const KernelLoops& k, const std::vector<Opt>& opts) {
  const int last = static_cast<int>(k.outputs.size()) - 1;
  auto refuse = [&](const Opt& o, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("rangeify: opt \"", OptsToString({o}),
                                                   "\" does not apply to a kernel of shape ",
                                                   k.shape, ": ", why));
  };
  auto refuse_all = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("rangeify: opts \"", OptsToString(opts), "\" ", why));
  };
  // [0]: the rows' (the loop before the last), [1]: the columns' (the last loop)
  std::optional<int64_t> upcast[2], group[2];
  LoopSplits s;
  for (const Opt& o : opts) {
    if (!k.reduces) return refuse(o, "it computes no reduction");
    if (o.op == OptOp::kUnroll) {
      if (o.axis >= static_cast<int>(k.reduction.size()) || !k.reduction[o.axis] || o.amount < 2 ||
          *k.reduction[o.axis] % o.amount != 0)
        return refuse(o, "expected a reduction loop of a constant length that AMOUNT divides");
      s.unrolls.push_back(o);
      continue;
    }
    if (o.axis < last - 1 || o.axis > last || !k.outputs[o.axis] || o.amount < 2 ||
        *k.outputs[o.axis] % o.amount != 0)
      return refuse(o,
                    "expected one of the last two output loops, of a constant length that "
                    "AMOUNT (2 or more) divides");
    std::optional<int64_t>& slot = (o.op == OptOp::kUpcast ? upcast : group)[o.axis == last];
    if (slot) return refuse(o, "that loop has an action of that kind already");
    slot = o.amount;
  }
  if ((upcast[0] || upcast[1]) && (group[0] || group[1]))
    return refuse_all("both upcast and group a kernel's sums");
  if ((upcast[0] && !upcast[1]) || (group[0] && !group[1]))
    return refuse_all("tile rows without tiling the columns");
  if (upcast[1] && *upcast[1] * upcast[0].value_or(1) > kMaxRegisterTile)
    return refuse_all(absl::StrCat("hold more than ", kMaxRegisterTile, " sums in registers"));
  if (group[1] && *group[1] > kMaxGroupColumns)
    return refuse_all(absl::StrCat("group more than ", kMaxGroupColumns, " columns"));
  s.registers = upcast[1].has_value();
  s.rows = (s.registers ? upcast : group)[0].value_or(0);
  s.columns = (s.registers ? upcast : group)[1].value_or(0);
  return s;
}

}  // namespace uopc
