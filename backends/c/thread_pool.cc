#include "backends/c/thread_pool.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>

#include <sched.h>

namespace uopc::cpu {

int ThreadsFromEnvironment() {
  if (const char* v = std::getenv("UOPC_THREADS"); v && *v) {
    char* end = nullptr;
    errno = 0;
    long n = std::strtol(v, &end, 10);
    if (*end == 0 && errno == 0 && n >= 1 && n <= 1024) return static_cast<int>(n);
    std::fprintf(stderr,
                 "uopc: UOPC_THREADS=%s is not a count of threads from 1 to 1024; using %s\n", v,
                 *end == 0 && n > 1024 ? "1024" : "every core");
    if (*end == 0 && n > 1024) return 1024;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool& ThreadPool::Get() {
  static ThreadPool* pool = new ThreadPool(ThreadsFromEnvironment());
  return *pool;
}

ThreadPool::ThreadPool(int threads) {
  // the caller's thread is one; a worker the system cannot start (its limit on threads or
  // address space) leaves the pool smaller, with one line on stderr, never an abort
  for (int i = 1; i < threads; ++i) {
    try {
      workers_.emplace_back([this] { Work(); });
    } catch (const std::system_error& e) {
      std::fprintf(stderr,
                   "uopc: c plugin: %d of the %d threads asked for could be started (%s); "
                   "kernels run on %d (UOPC_THREADS sets how many)\n",
                   i, threads, e.what(), i);
      break;
    }
  }
  threads_ = static_cast<int>(workers_.size()) + 1;
  for (std::thread& t : workers_) t.detach();  // they sleep until the process ends
}

void ThreadPool::Job::Run() {
  for (int i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
    (*fn)(i);
    if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
      std::lock_guard<std::mutex> lock(mu);
      finished.notify_all();
    }
  }
}

void ThreadPool::Work() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return !jobs_.empty(); });
      job = jobs_.front();
      if (job->next.load(std::memory_order_relaxed) >= job->n) {  // all its chunks taken
        jobs_.pop_front();
        continue;
      }
    }
    job->Run();
  }
}

void ThreadPool::ParallelFor(int n, const std::function<void(int)>& fn) {
  if (n <= 1 || threads_ == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(job);
  }
  wake_.notify_all();
  job->Run();
  {
    std::unique_lock<std::mutex> lock(job->mu);
    job->finished.wait(lock, [&] { return job->done.load(std::memory_order_acquire) == n; });
  }
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.erase(std::remove(jobs_.begin(), jobs_.end(), job), jobs_.end());
}

}  // namespace uopc::cpu
