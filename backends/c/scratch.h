// A buffer of packed operands or partial sums that a supplied matmul kernel keeps for its next
// call (one per thread). Its start is on a cache line, as an AMX tile's rows then are: a tile
// load whose 64-byte rows straddle two lines takes six times as long (measured, 18 against
// 3 ns).
#pragma once

#include <cstdint>
#include <memory>
#include <new>

namespace uopc::cpu {

template <typename T>
class Scratch {
 public:
  /// At least `count` elements, 64-byte aligned; the earlier contents are lost when it grows.
  T* Get(int64_t count) {
    if (count > size_) {
      data_.reset(new (std::align_val_t{64}) T[count]);
      size_ = count;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<T[], Free> data_;
  int64_t size_ = 0;
};

}  // namespace uopc::cpu
