// PinnedPool: the pinned host memory a CUDA device stages its copies through, bounded.
// Chunks are one size (4 MiB), at most `max_chunks` of them (64 MiB in all by default,
// UOPC_CUDA_PINNED_MB): a copy larger than a chunk goes through several, one after another,
// and when all are in flight a copy waits for one to come back (its earlier pieces finish
// on their own: the stream does not wait for the host). Idle chunks beyond `keep_chunks` go
// back to the system as they are returned. Where pinned memory cannot be had at all, Take
// says so once (a warning on stderr) and the caller copies from pageable memory.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

namespace uopc::cuda {

class PinnedPool {
 public:
  struct Options {
    size_t chunk_bytes = size_t{4} << 20;
    size_t max_chunks = 16;
    size_t keep_chunks = 4;  // idle chunks kept for the next copies
  };
  /// `alloc` gives pinned memory of a chunk's size (null when there is none); `free` takes
  /// it back. Neither is called from Give (a CUDA host function may not call CUDA).
  PinnedPool(Options o, std::function<void*(size_t)> alloc, std::function<void(void*)> free);
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  size_t chunk_bytes() const { return o_.chunk_bytes; }
  /// A chunk, waiting while `max_chunks` are taken; null (warned once) if none can be made.
  void* Take();
  /// Returns a chunk taken (from any thread; no allocator call is made here).
  void Give(void* chunk);
  /// Chunks held (taken or idle), and taken now.
  size_t held() const;
  size_t taken() const;

 private:
  void ReleaseSurplus(std::unique_lock<std::mutex>& lock);

  const Options o_;
  std::function<void*(size_t)> alloc_;
  std::function<void(void*)> free_;
  mutable std::mutex mu_;
  std::condition_variable returned_;
  std::vector<void*> idle_;
  size_t held_ = 0;
  bool warned_ = false;
};

/// The pool's options from UOPC_CUDA_PINNED_MB (the most pinned memory a device holds for
/// copies, at least one chunk; default 64).
PinnedPool::Options PinnedPoolOptionsFromEnvironment();

}  // namespace uopc::cuda
