#include "backends/cuda/pinned_pool.h"

#include <algorithm>
#include <cstdio>

#include "core/env.h"

namespace uopc::cuda {

PinnedPool::PinnedPool(Options o, std::function<void*(size_t)> alloc,
                       std::function<void(void*)> free)
    : o_(o), alloc_(std::move(alloc)), free_(std::move(free)) {}

PinnedPool::~PinnedPool() {
  for (void* p : idle_) free_(p);
}

void* PinnedPool::Take() {
  std::unique_lock<std::mutex> lock(mu_);
  ReleaseSurplus(lock);
  returned_.wait(lock, [&] { return !idle_.empty() || held_ < o_.max_chunks; });
  if (!idle_.empty()) {
    void* p = idle_.back();
    idle_.pop_back();
    return p;
  }
  ++held_;  // (counted before the call: another Take waits on it)
  lock.unlock();
  void* p = alloc_(o_.chunk_bytes);
  lock.lock();
  if (p) return p;
  --held_;
  returned_.notify_one();
  if (!warned_) {
    warned_ = true;
    std::fprintf(stderr,
                 "uopc: cuda plugin: no pinned memory for a %zu-byte staging chunk (%zu held); "
                 "copies go from pageable memory, slower\n",
                 o_.chunk_bytes, held_);
  }
  return nullptr;
}

void PinnedPool::Give(void* chunk) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(chunk);
  returned_.notify_one();
}

// (on a thread that may call the allocator: Take's)
void PinnedPool::ReleaseSurplus(std::unique_lock<std::mutex>& lock) {
  std::vector<void*> surplus;
  while (idle_.size() > o_.keep_chunks) {
    surplus.push_back(idle_.back());
    idle_.pop_back();
    --held_;
  }
  if (surplus.empty()) return;
  lock.unlock();
  for (void* p : surplus) free_(p);
  lock.lock();
}

size_t PinnedPool::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

size_t PinnedPool::taken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_ - idle_.size();
}

PinnedPool::Options PinnedPoolOptionsFromEnvironment() {
  PinnedPool::Options o;
  const int64_t mb = EnvInt("UOPC_CUDA_PINNED_MB", 1, 1 << 20, 64);
  o.max_chunks = std::max<size_t>(1, (static_cast<size_t>(mb) << 20) / o.chunk_bytes);
  o.keep_chunks = std::min(o.keep_chunks, o.max_chunks);
  return o;
}

}  // namespace uopc::cuda
