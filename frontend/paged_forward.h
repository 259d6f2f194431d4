// PagedForward: one step of a Gpt over many sequences at once, their keys and values in a
// PagedKvCache. The step's M tokens are any mix: one new token of each decoding sequence,
// a chunk of a prompt of another. Each token's key and value are set into its row of the
// pool (an in-place scatter), and each token attends to the positions [0, its own] of its
// sequence, read through the sequence's block table: a row index that is a load of the
// table (an INDEX whose index is a LOAD). M, the span (in steps) and the number of sequences S are
// VARs, so one plan serves every step, whatever the batch and the lengths. Positions are
// read in units of gcd(block size, kSpanStep), one table load a unit; the keys of a unit lie
// channel-major (at each channel its positions side by side), so that a kernel's kSpanStep
// sums of q . k take one vector load a channel.
#pragma once

#include "frontend/nn.h"
#include "frontend/paged_kv_cache.h"
#include "frontend/sym_int.h"

namespace uopc {

/// Tokens a step's matmuls take at a time where M is a multiple of it (the batcher pads a
/// step to one, with tokens that write the cache's scratch row).
inline constexpr int64_t kTokenRows = 8;

/// Positions a step reads at a time: its span is a number of steps of this many (positions
/// past a sequence's own are masked).
inline constexpr int64_t kSpanStep = 8;

/// A step's tokens (each an i32 tensor on the model's device).
struct PagedStep {
  Tensor tokens;     // (M): the token ids
  Tensor positions;  // (M): each token's position in its sequence
  Tensor rows;       // (M): the pool row each token's key and value go to
  Tensor sequence;   // (M): which row of `tables` each token's sequence has
  Tensor tables;     // (N, cache.table_width()), N a number: block tables (padded with 0)
  Tensor last;       // (S): the step index of each sequence's token whose logits are wanted
  SymInt span_steps;  // positions read, in steps of kSpanStep: at least 1 + every token's
                      // position, at most the context rounded up
};

/// The logits (S, vocab) of the `last` tokens; the cache's rows of the step's tokens are
/// written (lazily, by the plan that realizes the logits). Throws uopc::Error for a model
/// on several devices or split over ranks, or a step whose shapes do not agree.
Tensor PagedForward(const Gpt& model, PagedKvCache& cache, const PagedStep& step);

}  // namespace uopc
