#include "frontend/paged_kv_cache.h"

#include "absl/strings/str_cat.h"

#include "frontend/autocast.h"
#include "frontend/error.h"

namespace uopc {

PagedKvCache::PagedKvCache(const Gpt& model, int64_t num_blocks, int64_t block_size)
    : num_blocks_(num_blocks), block_size_(block_size), context_(model.config.context) {
  const GptConfig& c = model.config;
  if (num_blocks < 1 || block_size < 1 || num_blocks + 1 > INT32_MAX / block_size)
    ThrowInvalid(absl::StrCat("paged kv cache: ", num_blocks, " blocks of ", block_size,
                              " positions; expected at least one block of at least one "
                              "position, and at most 2^31-1 positions in all"));
  const DType t = Autocast::Current().value_or(DType::kF32);
  for (const auto& b : model.h) {
    const int64_t width = b->attn.heads * (c.dim / c.heads);
    for (auto* pool : {&k_, &v_})  // (uploaded: no plan to build)
      pool->push_back(Tensor::FromVector(std::vector<float>((num_blocks + 1) * block_size * width, 0),
                                         {(num_blocks + 1) * block_size, width}, t,
                                         b->ln_1.weight.device()));
  }
  for (int32_t b = static_cast<int32_t>(num_blocks); b-- > 0;) free_.push_back(b);
  holders_.assign(num_blocks, 0);
}

bool PagedKvCache::Grow(int64_t seq, int64_t length) {
  if (length < 0 || length > context_)
    ThrowInvalid(absl::StrCat("paged kv cache: sequence ", seq, " of ", length,
                              " positions; expected at most the model's context, ", context_));
  std::vector<int32_t>& table = tables_[seq];
  const int64_t more = BlocksFor(length) - static_cast<int64_t>(table.size());
  if (more > free_blocks()) {
    if (table.empty()) tables_.erase(seq);
    return false;
  }
  for (int64_t i = 0; i < more; ++i) {
    table.push_back(free_.back());
    holders_[free_.back()] = 1;
    free_.pop_back();
  }
  return true;
}

void PagedKvCache::Share(int64_t seq, const std::vector<int32_t>& blocks) {
  std::vector<int32_t>& table = tables_[seq];
  if (!table.empty())
    ThrowInvalid(absl::StrCat("paged kv cache: sequence ", seq, " shares blocks while holding ",
                              table.size(), "; expected it to hold none yet"));
  for (int32_t b : blocks)
    if (b < 0 || b >= num_blocks_ || holders_[b] == 0)
      ThrowInvalid(absl::StrCat("paged kv cache: block ", b,
                                " shared, which no sequence holds; expected a held block"));
  for (int32_t b : blocks) ++holders_[b];
  table = blocks;
}

void PagedKvCache::Release(int64_t seq) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  for (auto b = it->second.rbegin(); b != it->second.rend(); ++b)
    if (--holders_[*b] == 0) free_.push_back(*b);
  tables_.erase(it);
}

const std::vector<int32_t>& PagedKvCache::Table(int64_t seq) const {
  static const std::vector<int32_t> kNone;
  auto it = tables_.find(seq);
  return it == tables_.end() ? kNone : it->second;
}

int64_t PagedKvCache::Row(int64_t seq, int64_t pos) const {
  const std::vector<int32_t>& t = Table(seq);
  if (pos < 0 || pos / block_size_ >= static_cast<int64_t>(t.size()))
    ThrowInvalid(absl::StrCat("paged kv cache: position ", pos, " of sequence ", seq,
                              ", which holds ", t.size() * block_size_, " positions"));
  return t[pos / block_size_] * block_size_ + pos % block_size_;
}

}  // namespace uopc
