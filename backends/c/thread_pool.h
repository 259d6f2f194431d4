// ThreadPool: the worker threads that the CPU devices run a kernel's chunks on (the chunks
// of its global range, see passes/thread_outer_loop.h): UOPC_THREADS threads in all
// (default: every core the process may run on), the launching thread being one of them.
// An idle worker spins for the next kernel for 200 us, then sleeps on a condition variable.
// Several devices may share it at once: each launch waits for its own chunks only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace uopc::cpu {

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
  int sleeping_ = 0;                 // workers asleep on wake_, under mu_
};

/// UOPC_THREADS if set (>= 1), else the CPUs this process may run on.
int ThreadsFromEnvironment();

}  // namespace uopc::cpu
