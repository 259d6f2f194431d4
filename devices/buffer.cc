#include "devices/buffer.h"

#include "devices/allocator.h"

namespace uopc {

Buffer::Buffer(Device* device, CachingAllocator* allocator, uopc_buffer* block, uint64_t size_class,
               DType dtype, int64_t count)
    : storage_(std::make_shared<Storage>(device, allocator, block, size_class)),
      dtype_(dtype),
      count_(count) {}

Buffer::Storage::~Storage() {
  if (!block) return;  // (a buffer of another rank's device: no memory here)
  if (size_class == kWrapped)
    allocator->Free(block);
  else
    allocator->Release(block, size_class);
}

}  // namespace uopc
