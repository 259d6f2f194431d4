// PagedKvCache: the keys and values of many sequences at once, in blocks of `block_size`
// positions (16 by default) taken from one pool per layer (vLLM's paged attention). A
// sequence holds a list of blocks, its block table, which grows a block at a time as the
// sequence does and goes back to the free list when it ends: memory is bounded by the
// pool, not by batch x context, and a finished sequence's blocks serve the next one.
//
//   PagedKvCache cache(model, /*num_blocks=*/64);
//   if (cache.Grow(seq, 20)) ...;       // positions [0, 20) of `seq` have rows now
//   int64_t row = cache.Row(seq, 17);    // where position 17's key and value lie
//   cache.Release(seq);                  // its blocks are free again
//   cache.Share(other, {cache.Table(seq)[0]});  // a prompt prefix's block, held by both
//
// Pools are ((num_blocks + 1) * block_size, dim) tensors (a scratch block last) on each
// block's device, in autocast's dtype at construction; a step sets its new keys and values
// into their rows in place (a scatter that costs what the step has, not the pool). How the
// elements of a block lie is the step's (frontend/paged_forward.h: values row by row, keys
// channel-major within units of positions).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "frontend/nn.h"

namespace uopc {

class PagedKvCache {
 public:
  /// A pool of `num_blocks` blocks of `block_size` positions for each layer of `model`.
  /// Throws uopc::Error on sizes below 1 or a pool past 2^31-1 rows.
  PagedKvCache(const Gpt& model, int64_t num_blocks, int64_t block_size = 16);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  /// The longest block table (a full-context sequence's): the table's width in a step.
  int64_t table_width() const { return (context_ + block_size_ - 1) / block_size_; }
  /// Blocks a sequence of `length` positions holds.
  int64_t BlocksFor(int64_t length) const { return (length + block_size_ - 1) / block_size_; }

  /// Makes `seq` (any id; a new one starts empty) hold rows for `length` positions, taking
  /// blocks from the free list: false, changing nothing, where too few are free. Throws on
  /// a length past the model's context.
  bool Grow(int64_t seq, int64_t length);
  /// Makes `seq` (holding no blocks) start with `blocks`, which other sequences hold (the
  /// keys and values of a prompt prefix they share): each block goes back to the free
  /// list when the last sequence holding it is released. Shared blocks are never written:
  /// a sequence shares only full blocks of positions before the first it computes.
  void Share(int64_t seq, const std::vector<int32_t>& blocks);
  /// Gives `seq`'s blocks back (those it shares, once no other sequence holds them); a
  /// sequence it does not hold is a no-op.
  void Release(int64_t seq);
  /// `seq`'s blocks in order (empty for one it does not hold).
  const std::vector<int32_t>& Table(int64_t seq) const;
  /// The pool row of position `pos` of `seq` (which must hold it).
  int64_t Row(int64_t seq, int64_t pos) const;
  /// A row no sequence holds (in a block past the pool's): where a step's padding tokens
  /// write, so that a step's token count can be rounded up.
  int64_t scratch_row() const { return num_blocks_ * block_size_; }

  Tensor& keys(size_t layer) { return k_[layer]; }
  Tensor& values(size_t layer) { return v_[layer]; }
  size_t layers() const { return k_.size(); }

 private:
  std::vector<Tensor> k_, v_;
  int64_t num_blocks_, block_size_, context_;
  std::vector<int32_t> free_;  // (a stack: the block freed last is taken first)
  std::vector<int32_t> holders_;  // by block: the sequences holding it
  absl::flat_hash_map<int64_t, std::vector<int32_t>> tables_;
};

}  // namespace uopc
