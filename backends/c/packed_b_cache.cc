#include "backends/c/packed_b_cache.h"

#include <new>

namespace uopc::cpu {

PackedBCache& PackedBCache::Get() {
  static PackedBCache* cache = new PackedBCache;  // (never destroyed: queues use it at exit)
  return *cache;
}

void PackedBCache::SetCapacity(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  capacity_ = bytes;
  while (bytes_ > capacity_) Drop(entries_.find(used_.back())->second);
}

void PackedBCache::Drop(Entry& e) {
  e.state = Entry::kSeen;
  if (!e.data) return;
  bytes_ -= e.bytes;
  used_.erase(e.lru);
  e.data.reset();
}

PackedBCache::Use PackedBCache::Find(const Key& key, BufferVersion v, int64_t floats) {
  const uint64_t bytes = static_cast<uint64_t>(floats) * sizeof(float);
  if (v.id == 0 || floats <= 0) return {};
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > capacity_) return {};
  auto [it, inserted] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (inserted) ++keys_of_[key.id];
  if (inserted || e.writes != v.writes) {  // seen first at this content
    e.writes = v.writes;
    e.state = Entry::kSeen;
    return {};
  }
  if (e.state == Entry::kFilled) {
    used_.splice(used_.begin(), used_, e.lru);
    return {e.data, true};
  }
  if (e.state == Entry::kFilling) return {};  // (another call fills it)
  // the second call at this content: b packed into the copy's memory where no call still
  // reads its old content; else into new memory, room made by the least recently used
  if (!e.data || e.data.use_count() > 1 || e.bytes != bytes) {
    Drop(e);
    while (bytes_ + bytes > capacity_) Drop(entries_.find(used_.back())->second);
    e.data.reset(new (std::nothrow) float[floats]);
    if (!e.data) return {};
    e.bytes = bytes;
    bytes_ += bytes;
    used_.push_front(key);
    e.lru = used_.begin();
  } else {
    used_.splice(used_.begin(), used_, e.lru);
  }
  e.state = Entry::kFilling;
  return {e.data, false};
}

void PackedBCache::Ready(const Key& key, BufferVersion v) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second.writes == v.writes && it->second.state == Entry::kFilling)
    it->second.state = Entry::kFilled;
}

void PackedBCache::Forget(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!keys_of_.erase(id)) return;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->first.id != id) {
      ++it;
      continue;
    }
    Drop(it->second);
    entries_.erase(it++);
  }
}

uint64_t PackedBCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace uopc::cpu
