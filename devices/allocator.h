// The caching allocator of one device: freed memory goes to a free list by size class and
// is handed out again, so a training loop that allocates the same sizes every step stops
// calling the plugin after the first. Size classes are powers of two up to 1 MiB and
// multiples of 1 MiB above. When the plugin runs out of memory, the cache is emptied and
// the allocation tried once more.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "devices/plugin.h"

namespace uopc {

class CachingAllocator {
 public:
  CachingAllocator(const Plugin& plugin, uopc_device* device) : plugin_(plugin), device_(device) {}
  ~CachingAllocator();

  /// A block of at least `bytes` bytes and the size class it came from.
  absl::StatusOr<uopc_buffer*> Allocate(uint64_t bytes, uint64_t* size_class);
  /// Returns a block of `size_class` to the cache.
  void Release(uopc_buffer* block, uint64_t size_class);
  /// Frees a block that is not the cache's (a wrapped one) now.
  void Free(uopc_buffer* block);
  /// Frees every cached block.
  void EmptyCache();

  struct Stats {
    uint64_t plugin_allocs = 0, cache_hits = 0, cached_bytes = 0, live_bytes = 0;
  };
  Stats stats();
  /// The size class that holds `bytes`.
  static uint64_t SizeClass(uint64_t bytes);

 private:
  const Plugin& plugin_;
  uopc_device* device_;
  std::mutex mu_;
  absl::flat_hash_map<uint64_t, std::vector<uopc_buffer*>> free_;
  Stats stats_;
};

}  // namespace uopc
