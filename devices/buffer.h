// Buffer: device memory of `count` elements of `dtype`, tagged with its device. Copies of
// a Buffer share the memory; when the last goes, the memory returns to the device's
// caching allocator.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/plugin_api.h"
#include "core/dtype.h"

namespace uopc {

class Device;
class CachingAllocator;

class Buffer {
 public:
  Buffer() = default;
  /// Size class of a block the allocator did not make (buffer_wrap): freed, not cached.
  static constexpr uint64_t kWrapped = ~uint64_t{0};
  /// Takes ownership of `block` (of `size_class` bytes from `allocator`, or kWrapped).
  Buffer(Device* device, CachingAllocator* allocator, uopc_buffer* block, uint64_t size_class,
         DType dtype, int64_t count);

  explicit operator bool() const { return storage_ != nullptr; }
  Device* device() const { return storage_ ? storage_->device : nullptr; }
  uopc_buffer* handle() const { return storage_ ? storage_->block : nullptr; }
  DType dtype() const { return dtype_; }
  int64_t count() const { return count_; }
  uint64_t bytes() const { return static_cast<uint64_t>(count_) * DTypeSize(dtype_); }
  /// The same memory as `count` elements of `dtype` (no more bytes than it has: checked by
  /// the caller), sharing it: a plan's temporaries in one arena (runtime/memory_plan.h).
  Buffer As(DType dtype, int64_t count) const {
    Buffer b = *this;
    b.dtype_ = dtype;
    b.count_ = count;
    return b;
  }
  /// Whether two Buffers share memory.
  bool SameMemory(const Buffer& o) const { return storage_ == o.storage_; }

 private:
  struct Storage {
    Storage(Device* d, CachingAllocator* a, uopc_buffer* b, uint64_t c)
        : device(d), allocator(a), block(b), size_class(c) {}
    Storage(const Storage&) = delete;  // one owner of the block: its destructor frees it
    Storage& operator=(const Storage&) = delete;
    ~Storage();
    Device* device;
    CachingAllocator* allocator;
    uopc_buffer* block;
    uint64_t size_class;
  };
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::kVoid;
  int64_t count_ = 0;
};

}  // namespace uopc
