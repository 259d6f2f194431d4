#include "devices/allocator.h"

namespace uopc {

uint64_t CachingAllocator::SizeClass(uint64_t bytes) {
  constexpr uint64_t kMiB = 1 << 20;
  if (bytes > kMiB) return (bytes + kMiB - 1) / kMiB * kMiB;
  uint64_t c = 256;
  while (c < bytes) c <<= 1;
  return c;
}

absl::StatusOr<uopc_buffer*> CachingAllocator::Allocate(uint64_t bytes, uint64_t* size_class) {
  uint64_t c = SizeClass(bytes);
  *size_class = c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(c);
    if (it != free_.end() && !it->second.empty()) {
      uopc_buffer* b = it->second.back();
      it->second.pop_back();
      ++stats_.cache_hits;
      stats_.cached_bytes -= c;
      stats_.live_bytes += c;
      return b;
    }
  }
  uopc_buffer_alloc_args a{};
  a.device = device_;
  a.size = c;
  a.align = 64;
  absl::Status s = plugin_.Call(&a);
  if (s.code() == absl::StatusCode::kResourceExhausted) {
    EmptyCache();
    s = plugin_.Call(&a);
  }
  if (!s.ok()) return s;
  uopc_buffer* b = a.buffer;
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.plugin_allocs;
  stats_.live_bytes += c;
  return b;
}

void CachingAllocator::Release(uopc_buffer* block, uint64_t size_class) {
  std::lock_guard<std::mutex> lock(mu_);
  free_[size_class].push_back(block);
  stats_.cached_bytes += size_class;
  stats_.live_bytes -= size_class;
}

void CachingAllocator::Free(uopc_buffer* block) {
  uopc_buffer_free_args a{};
  a.buffer = block;
  plugin_.Call(&a).IgnoreError();
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [c, blocks] : free_)
    for (uopc_buffer* b : blocks) Free(b);
  free_.clear();
  stats_.cached_bytes = 0;
}

CachingAllocator::Stats CachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

CachingAllocator::~CachingAllocator() { EmptyCache(); }

}  // namespace uopc
