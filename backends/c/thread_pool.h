// ThreadPool: the worker threads that the CPU devices run a kernel's chunks on (the chunks
// of its global range, see passes/thread_outer_loop.h): UOPC_THREADS threads in all
// (default: every core the process may run on), the launching thread being one of them.
// An idle worker spins for the next kernel for 200 us (yielding its core to any thread that
// wants it), then sleeps on a condition variable;
// a device wakes the sleepers as it queues a kernel that will want them (Wake), so that they
// spin by the time its chunks come.
// Several devices may share it at once: each launch waits for its own chunks only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace uopc::cpu {

/// A supplied kernel of fewer flops runs on the calling thread alone (a decode step's
/// matrix-vector products: waking a worker and handing it a share costs more than the share).
inline constexpr int64_t kMinThreadedFlops = int64_t{1} << 20;

class ThreadPool {
 public:
  /// The process's pool (started on first use, never stopped: kernels may run until exit).
  static ThreadPool& Get();
  explicit ThreadPool(int threads);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Threads that run chunks, the caller included (>= 1).
  int threads() const { return threads_; }
  /// Runs fn(0), ..., fn(n - 1) on the workers and the calling thread; returns when all
  /// are done.
  void ParallelFor(int n, const std::function<void(int)>& fn);
  /// Wakes the workers that sleep, to spin for the next ParallelFor (a kernel queued behind
  /// others: waking takes tens of microseconds, which they then overlap); cheap where none
  /// sleeps.
  void Wake();
  /// Workers asleep now, and how many times one has woken so far (for tests and tracing).
  int sleeping() const { return sleeping_.load(std::memory_order_relaxed); }
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

 private:
  struct Job {
    const std::function<void(int)>* fn;
    int n;
    std::atomic<int> next{0}, done{0};
    std::mutex mu;
    std::condition_variable finished;
    void Run();
  };
  void Work();

  int threads_ = 1;  // (set once, in the constructor)
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::atomic<uint64_t> posted_{0};  // jobs posted so far (what spinning workers watch)
  std::atomic<int> sleeping_{0};     // workers asleep on wake_ (changed under mu_)
  uint64_t wakes_ = 0;               // Wake calls that found sleepers, under mu_
  std::atomic<uint64_t> wakeups_{0};  // returns from sleep
};

/// UOPC_THREADS if set (>= 1), else the CPUs this process may run on.
int ThreadsFromEnvironment();

}  // namespace uopc::cpu
