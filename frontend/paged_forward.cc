#include "frontend/paged_forward.h"

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

#include "frontend/error.h"

namespace uopc {
namespace {

void Check(const Gpt& model, PagedKvCache& cache, const PagedStep& s) {
  Device* d = model.wte.weight.device();
  bool one_device = model.head().device() == d && model.ln_f.weight.device() == d;
  for (const auto& b : model.h) one_device &= b->ln_1.weight.device() == d && b->attn.tp.size == 1;
  if (!one_device)
    ThrowInvalid("paged forward: a model on several devices or split over ranks; expected one "
                 "device (a pipeline or tensor-parallel model decodes with Generate)");
  const SymInt M = s.tokens.shape(0);
  const bool fits = s.tokens.ndim() == 1 && s.positions.shape() == s.tokens.shape() &&
                    s.rows.shape() == s.tokens.shape() && s.sequence.shape() == s.tokens.shape() &&
                    s.tables.ndim() == 2 && s.last.ndim() == 1 && !s.tables.shape(0).is_symbolic() &&
                    s.tables.shape(1) == SymInt(cache.table_width()) &&
                    cache.layers() == model.h.size() &&
                    s.span_steps.max() * kSpanStep <= model.config.context + kSpanStep - 1;
  if (!fits)
    ThrowInvalid(absl::StrCat(
        "paged forward: tokens ", ShapeString(s.tokens.shape()), ", positions ",
        ShapeString(s.positions.shape()), ", rows ", ShapeString(s.rows.shape()), ", sequence ",
        ShapeString(s.sequence.shape()), ", tables ", ShapeString(s.tables.shape()), ", last ",
        ShapeString(s.last.shape()), ", span steps up to ", s.span_steps.max(), " over a cache of ",
        cache.layers(), " layers; expected (M) each, tables (N, ", cache.table_width(),
        ") with a number of rows, last (S), a span up to the context (", model.config.context, ") and a cache of ",
        model.h.size(), " layers"));
}

}  // namespace

Tensor PagedForward(const Gpt& model, PagedKvCache& cache, const PagedStep& s) {
  Check(model, cache, s);
  const GptConfig& c = model.config;
  Device* dev = model.wte.weight.device();
  const SymInt M = s.tokens.shape(0), steps = s.span_steps;
  const int64_t bs = cache.block_size(), nb = cache.table_width(), C = c.dim, H = c.heads,
                D = C / H, P = cache.keys(0).shape(0).value(), S8 = kSpanStep,
                R = (c.context + S8 - 1) / S8 * S8;  // (positions the steps can reach)
  // a Linear or a LayerNorm on the tokens in groups of kTokenRows where M is a multiple of
  // it: a loop of that many rows beside the symbolic one, which a kernel keeps side by side
  // (the matmul's register tile; a row's mean and variance, each a chain of 128 dependent
  // adds, eight chains at once)
  const SymInt groups = M.FloorDiv(kTokenRows);
  const bool grouped = groups * kTokenRows == M;
  auto by_groups = [&](const auto& layer, const Tensor& x) {
    const int64_t in = x.shape(1).value();
    if (!grouped) return layer.Forward(x);
    const Tensor y = layer.Forward(x.Reshape({groups, kTokenRows, in}));
    return y.Reshape({M, y.shape(2)});
  };
  auto dense = [&](const Linear& l, const Tensor& x) { return by_groups(l, x); };
  auto norm = [&](const LayerNorm& n, const Tensor& x) { return by_groups(n, x); };
  // The positions read, t = step * S8 + j for step < steps and j < S8: a loop of known
  // length (j) beside the symbolic one, whose S8 sums a kernel keeps side by side (the span
  // alone, a symbolic last loop, is one dot product at a time). They are read in units of
  // g = gcd(bs, S8) positions, which lie together in one block: a unit is one row of the
  // pool seen as (P / g, g * C), so one index (a load of the table) serves g * C elements,
  // and a kernel reads the S8 keys of a step at one row and offsets it knows.
  const int64_t g = std::gcd(bs, S8), U = S8 / g, per_block = bs / g;
  // f(u) for the units u = t / g of the positions read, as (M, steps, U): f of 0..n-1 laid
  // over the table's blocks (`view` of (nb, per_block)); 0 past the table (block 0, read,
  // and masked as future)
  auto along = [&](int64_t n, TensorShape view) {
    Tensor f = Tensor::Arange(0, static_cast<double>(n), 1, dev)
                   .Reshape(view)
                   .Expand({nb, per_block})
                   .Reshape({nb * per_block});
    f = nb * per_block >= R / g ? f.Slice(0, 0, R / g) : f.Pad({{0, R / g - nb * per_block}});
    return f.Reshape({R / S8, U}).Slice(0, 0, steps).Unsqueeze(0).Expand({M, steps, U});
  };
  // unit[m][s][u]: the pool's unit of token m's sequence's positions t = s * S8 + u * g ...:
  // table[t / bs] * per_block + t % bs / g
  const Tensor table = s.tables.IndexSelect(0, s.sequence).Unsqueeze(1).Expand({M, steps, nb});
  const Tensor unit = table.Gather(2, along(nb, {nb, 1})) * static_cast<double>(per_block) +
                      along(per_block, {1, per_block});  // (M, steps, U)
  // position t is in token m's future when positions[m] < t
  const Tensor t = Tensor::Arange(0, static_cast<double>(R), 1, dev)
                       .Reshape({R / S8, S8})
                       .Slice(0, 0, steps)
                       .Unsqueeze(0)
                       .Expand({M, steps, S8});
  const Tensor future = s.positions.Reshape({M, 1, 1})
                            .Expand({M, steps, S8})
                            .Lt(t)
                            .Unsqueeze(1)
                            .Expand({M, H, steps, S8});
  const Tensor at = s.rows.Reshape({M, 1}).Expand({M, C});
  // A pool's units as (M, steps, U, g * C) rows: values lie position-major, each unit
  // (g, C); keys channel-major, (C, g), so that at each d the g keys of a unit are adjacent
  // and a kernel's S8 sums over d take them as one vector.
  auto units = [&](const Tensor& pool) {
    return pool.Reshape({1, 1, P / g, g * C})
        .Expand({M, steps, P / g, g * C})
        .Gather(2, unit.Unsqueeze(3).Expand({M, steps, U, g * C}));
  };
  auto read_values = [&](const Tensor& pool) {  // (M, H, steps, S8, D)
    return units(pool).Reshape({M, steps, S8, H, D}).Permute({0, 3, 1, 2, 4});
  };
  auto read_keys = [&](const Tensor& pool) {  // (M, H, steps, S8, D)
    return units(pool)
        .Reshape({M, steps, U, H, D, g})
        .Permute({0, 3, 1, 2, 5, 4})
        .Reshape({M, H, steps, S8, D});
  };
  // row r of the keys, as the values have it: (P, C)
  auto key_rows = [&](const Tensor& pool) {
    return pool.Reshape({P / g, C, g}).Permute({0, 2, 1}).Reshape({P, C});
  };
  Tensor x = model.wte.Forward(s.tokens) + model.wpe.Forward(s.positions);  // (M, C)
  for (size_t l = 0; l < model.h.size(); ++l) {
    const Block& b = *model.h[l];
    const Tensor qkv = dense(b.attn.c_attn, norm(b.ln_1, x));  // (M, 3C)
    auto part = [&](int64_t k) { return qkv.Shrink({{0, M}, {k * C, (k + 1) * C}}); };
    Tensor& keys = cache.keys(l);
    Tensor& values = cache.values(l);
    key_rows(keys).ScatterInPlace(0, at, part(1).Cast(keys.dtype()));
    values.ScatterInPlace(0, at, part(2).Cast(values.dtype()));
    const Tensor q = part(0).Reshape({M, H, 1, 1, D}).Expand({M, H, steps, S8, D});
    Tensor att = future.Where(
        -INFINITY, (q * read_keys(keys)).Sum({4}) * (1.0 / std::sqrt(static_cast<double>(D))));
    // the softmax over the positions (both axes), as Tensor::Softmax computes it
    att = (att - att.Max({2, 3}, true)).Exp();
    att = att / att.Sum({2, 3}, true);  // (M, H, steps, S8)
    const Tensor y = (att.Unsqueeze(4).Expand({M, H, steps, S8, D}) * read_values(values))
                         .Sum({2, 3})
                         .Reshape({M, C});
    x = x + dense(b.attn.c_proj, y);
    x = x + dense(b.mlp.c_proj, dense(b.mlp.c_fc, norm(b.ln_2, x)).Gelu());
  }
  return model.ln_f.Forward(x.IndexSelect(0, s.last)).Matmul(model.head().Transpose());
}

}  // namespace uopc
