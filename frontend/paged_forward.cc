#include "frontend/paged_forward.h"

#include <cmath>

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
                    cache.layers() == model.h.size() && s.span.max() <= model.config.context;
  if (!fits)
    ThrowInvalid(absl::StrCat(
        "paged forward: tokens ", ShapeString(s.tokens.shape()), ", positions ",
        ShapeString(s.positions.shape()), ", rows ", ShapeString(s.rows.shape()), ", sequence ",
        ShapeString(s.sequence.shape()), ", tables ", ShapeString(s.tables.shape()), ", last ",
        ShapeString(s.last.shape()), ", span up to ", s.span.max(), " over a cache of ",
        cache.layers(), " layers; expected (M) each, tables (N, ", cache.table_width(),
        ") with a number of rows, last (S), a span up to the context (", model.config.context, ") and a cache of ",
        model.h.size(), " layers"));
}

}  // namespace

Tensor PagedForward(const Gpt& model, PagedKvCache& cache, const PagedStep& s) {
  Check(model, cache, s);
  const GptConfig& c = model.config;
  Device* dev = model.wte.weight.device();
  const SymInt M = s.tokens.shape(0), L = s.span;
  const int64_t bs = cache.block_size(), nb = cache.table_width(), C = c.dim, H = c.heads,
                D = C / H, P = cache.keys(0).shape(0).value();
  // a Linear on the tokens in groups of kTokenRows where M is a multiple of it: a loop of
  // that many rows that the matmul can keep in registers, beside the symbolic one
  const SymInt groups = M.FloorDiv(kTokenRows);
  const bool grouped = groups * kTokenRows == M;
  auto dense = [&](const Linear& l, const Tensor& x) {
    const int64_t in = x.shape(1).value(), out = l.weight.shape(1).value();
    return grouped ? l.Forward(x.Reshape({groups, kTokenRows, in})).Reshape({M, out})
                   : l.Forward(x);
  };
  // row[m][t]: where position t of token m's sequence lies, t < L: table[t / bs] * bs + t % bs
  auto along = [&](int64_t n, TensorShape view) {  // 0..n-1 repeated to nb * bs, the first L
    return Tensor::Arange(0, static_cast<double>(n), 1, dev)
        .Reshape(view)
        .Expand({nb, bs})
        .Reshape({nb * bs})
        .Slice(0, 0, L)
        .Reshape({1, L})
        .Expand({M, L});
  };
  const Tensor table = s.tables.IndexSelect(0, s.sequence);  // (M, nb)
  const Tensor rows = table.Gather(1, along(nb, {nb, 1})) * static_cast<double>(bs) +
                      along(bs, {1, bs});  // (M, L)
  // position t is in token m's future when positions[m] < t
  const Tensor future = s.positions.Reshape({M, 1})
                            .Expand({M, L})
                            .Lt(along(nb * bs, {nb, bs}))
                            .Reshape({M, 1, 1, L})
                            .Expand({M, H, 1, L});
  const Tensor at = s.rows.Reshape({M, 1}).Expand({M, C});
  auto read = [&](const Tensor& pool) {  // (M, H, L, D)
    return pool.Unsqueeze(0)
        .Expand({M, P, C})
        .Gather(1, rows.Unsqueeze(2).Expand({M, L, C}))
        .Reshape({M, L, H, D})
        .Permute({0, 2, 1, 3});
  };
  Tensor x = model.wte.Forward(s.tokens) + model.wpe.Forward(s.positions);  // (M, C)
  for (size_t l = 0; l < model.h.size(); ++l) {
    const Block& b = *model.h[l];
    const Tensor qkv = dense(b.attn.c_attn, b.ln_1.Forward(x));  // (M, 3C)
    auto part = [&](int64_t k) { return qkv.Shrink({{0, M}, {k * C, (k + 1) * C}}); };
    Tensor& keys = cache.keys(l);
    Tensor& values = cache.values(l);
    keys.ScatterInPlace(0, at, part(1).Cast(keys.dtype()));
    values.ScatterInPlace(0, at, part(2).Cast(values.dtype()));
    Tensor att = part(0).Reshape({M, H, 1, D}).Matmul(read(keys).Transpose()) *
                 (1.0 / std::sqrt(static_cast<double>(D)));
    att = future.Where(-INFINITY, att).Softmax(-1);
    const Tensor y = att.Matmul(read(values)).Reshape({M, C});
    x = x + dense(b.attn.c_proj, y);
    x = x + dense(b.mlp.c_proj, dense(b.mlp.c_fc, b.ln_2.Forward(x)).Gelu());
  }
  return model.ln_f.Forward(x.IndexSelect(0, s.last)).Matmul(model.head().Transpose());
}

}  // namespace uopc
