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
  uopc_buffer* b = nullptr;
  absl::Status s =
      plugin_.Device(&uopc_device_api::buffer_alloc, "buffer_alloc", device_, c, uint64_t{64}, &b);
  if (s.code() == absl::StatusCode::kResourceExhausted) {
    EmptyCache();
    s = plugin_.Device(&uopc_device_api::buffer_alloc, "buffer_alloc", device_, c, uint64_t{64},
                       &b);
  }
  if (!s.ok()) return s;
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
  plugin_.Device(&uopc_device_api::buffer_free, "buffer_free", block).IgnoreError();
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [c, blocks] : free_)
    for (uopc_buffer* b : blocks)
      plugin_.Device(&uopc_device_api::buffer_free, "buffer_free", b).IgnoreError();
  free_.clear();
  stats_.cached_bytes = 0;
}

CachingAllocator::Stats CachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

CachingAllocator::~CachingAllocator() { EmptyCache(); }

}  // namespace uopc
