// A counter-based random generator: the n-th number of a stream is a hash of (seed, n),
// so the same seed gives the same numbers in the same order on any device and in any
// thread, and no state but a counter is kept. manual_seed resets the stream.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace uopc {

class RandomStream {
 public:
  /// The process-wide stream that Tensor::Rand and friends draw from.
  static RandomStream& Global();
  void Seed(uint64_t seed) {
    seed_ = seed;
    counter_ = 0;
  }
  /// Where the stream is: (seed, numbers drawn since), which a draw changes.
  std::pair<uint64_t, uint64_t> position() const { return {seed_, counter_}; }
  /// `n` uniform floats in [0, 1).
  std::vector<float> Uniform(int64_t n);
  /// `n` standard normal floats (Box-Muller).
  std::vector<float> Normal(int64_t n);
  /// `n` integers uniform in [lo, hi).
  std::vector<int32_t> Integers(int64_t n, int64_t lo, int64_t hi);

 private:
  uint64_t Next();  // the hash of (seed, counter++)
  uint64_t seed_ = 0, counter_ = 0;
};

}  // namespace uopc
