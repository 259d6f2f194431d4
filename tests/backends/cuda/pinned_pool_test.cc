// The CUDA plugin's staging pool, on ordinary memory (the allocator is the pool's caller's):
// bounded, reused, waiting rather than growing, returning idle chunks, and saying once when
// there is none.
#include "backends/cuda/pinned_pool.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace uopc::cuda {
namespace {

struct Counting {
  std::atomic<int> allocs{0}, frees{0};
  bool fail = false;
  PinnedPool Pool(PinnedPool::Options o) {
    return PinnedPool(
        o,
        [this](size_t n) -> void* {
          if (fail) return nullptr;
          ++allocs;
          return std::malloc(n);
        },
        [this](void* p) {
          ++frees;
          std::free(p);
        });
  }
};

TEST(PinnedPool, IsBoundedAndReusesItsChunks) {
  Counting c;
  PinnedPool pool = c.Pool({.chunk_bytes = 1024, .max_chunks = 3, .keep_chunks = 3});
  std::vector<void*> taken;
  for (int i = 0; i < 3; ++i) taken.push_back(pool.Take());
  EXPECT_EQ(pool.held(), 3u);
  // a fourth waits until one comes back (as a piece of a large copy waits for the stream)
  std::atomic<bool> got{false};
  void* fourth = nullptr;
  std::thread waiter([&] {
    fourth = pool.Take();
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got);
  pool.Give(taken[1]);
  waiter.join();
  EXPECT_EQ(fourth, taken[1]);
  EXPECT_EQ(c.allocs, 3);  // reused, not a new one
  EXPECT_EQ(pool.taken(), 3u);
  for (void* p : {taken[0], fourth, taken[2]}) pool.Give(p);
  EXPECT_EQ(pool.taken(), 0u);
}

TEST(PinnedPool, GivesIdleChunksBackBeyondWhatItKeeps) {
  Counting c;
  {
    PinnedPool pool = c.Pool({.chunk_bytes = 1024, .max_chunks = 8, .keep_chunks = 2});
    std::vector<void*> taken;
    for (int i = 0; i < 8; ++i) taken.push_back(pool.Take());
    for (void* p : taken) pool.Give(p);  // (a host function: no allocator call)
    EXPECT_EQ(c.frees, 0);
    EXPECT_EQ(pool.held(), 8u);
    pool.Give(pool.Take());  // the next copy frees what is beyond two idle chunks
    EXPECT_EQ(c.frees, 6);
    EXPECT_EQ(pool.held(), 2u);
  }
  EXPECT_EQ(c.frees, 8);  // and the pool's end, the rest
}

TEST(PinnedPool, WithoutPinnedMemoryItSaysSoOnceAndGivesNone) {
  Counting c;
  c.fail = true;
  PinnedPool pool = c.Pool({.chunk_bytes = 1024, .max_chunks = 2, .keep_chunks = 2});
  testing::internal::CaptureStderr();
  EXPECT_EQ(pool.Take(), nullptr);
  EXPECT_EQ(pool.Take(), nullptr);  // never waits for chunks that were never made
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "uopc: cuda plugin: no pinned memory for a 1024-byte staging chunk (0 held); copies "
            "go from pageable memory, slower\n");
  EXPECT_EQ(pool.held(), 0u);
}

TEST(PinnedPool, TakesItsSizeFromTheEnvironment) {
  setenv("UOPC_CUDA_PINNED_MB", "256", 1);
  EXPECT_EQ(PinnedPoolOptionsFromEnvironment().max_chunks, 64u);
  setenv("UOPC_CUDA_PINNED_MB", "1", 1);
  EXPECT_EQ(PinnedPoolOptionsFromEnvironment().max_chunks, 1u);
  EXPECT_EQ(PinnedPoolOptionsFromEnvironment().keep_chunks, 1u);
  unsetenv("UOPC_CUDA_PINNED_MB");
  EXPECT_EQ(PinnedPoolOptionsFromEnvironment().max_chunks, 16u);
}

}  // namespace
}  // namespace uopc::cuda
