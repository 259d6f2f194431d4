// The C plugin's ThreadPool (backends/c/thread_pool.h): every index of a ParallelFor runs
// once, whoever runs it; workers that fell asleep wake for a job or ahead of one (Wake); and
// launchers on several threads at once each wait for their own job only.
#include "backends/c/thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace uopc::cpu {
namespace {

// Polls `done` for up to 10 s (a bound, not a timing: it holds within microseconds).
template <typename F>
bool Eventually(F done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

// A pool of `threads` (never destroyed, as the process's is not: its workers live until exit).
ThreadPool& Pool(int threads) { return *new ThreadPool(threads); }

void ExpectEachIndexOnce(ThreadPool& pool, int n) {
  std::vector<std::atomic<int>> runs(n);
  pool.ParallelFor(n, [&](int i) { runs[i].fetch_add(1); });
  for (int i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << "index " << i << " of " << n;
}

TEST(ThreadPool, EachIndexRunsOnceWhateverTheCount) {
  ThreadPool& pool = Pool(3);
  ASSERT_EQ(pool.threads(), 3);
  for (int n : {0, 1, 2, 3, 7, 64}) ExpectEachIndexOnce(pool, n);
}

TEST(ThreadPool, SleepingWorkersWakeForAJobAndAheadOfOne) {
  ThreadPool& pool = Pool(3);
  ASSERT_TRUE(Eventually([&] { return pool.sleeping() == 2; }));  // (idle past their spin)
  ExpectEachIndexOnce(pool, 12);
  ASSERT_TRUE(Eventually([&] { return pool.sleeping() == 2; }));
  const uint64_t woken = pool.wakeups();
  pool.Wake();  // (they spin for a job that has not come yet, then sleep again)
  ASSERT_TRUE(Eventually([&] { return pool.wakeups() == woken + 2; }));
  ASSERT_TRUE(Eventually([&] { return pool.sleeping() == 2; }));
  ExpectEachIndexOnce(pool, 12);
  pool.Wake();  // (and a job right behind the wake)
  ExpectEachIndexOnce(pool, 12);
}

TEST(ThreadPool, LaunchersOnSeveralThreadsEachGetTheirOwnJob) {
  ThreadPool& pool = Pool(2);
  std::vector<std::thread> launchers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 3; ++t)
    launchers.emplace_back([&, t] {
      for (int round = 0; round < 200; ++round) {
        std::vector<std::atomic<int>> runs(8 + t);
        pool.ParallelFor(8 + t, [&](int i) { runs[i].fetch_add(1); });
        if (round % 50 == 0) pool.Wake();
        for (auto& r : runs) failures += r.load() != 1;
      }
    });
  for (std::thread& l : launchers) l.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace uopc::cpu
