#include "backends/c/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <cstring>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

namespace uopc::cpu {

int ThreadsFromEnvironment() {
  // (read once: the devices name the count and the pool starts that many, and a bad value
  // is said once)
  static const int threads = [] {
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
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return threads;
}

ThreadPool& ThreadPool::Get() {
  static ThreadPool* pool = new ThreadPool(ThreadsFromEnvironment());
  return *pool;
}

ThreadPool::ThreadPool(int threads) {
  // the caller's thread is one; a worker the system cannot start (its limit on threads or
  // address space) leaves the pool smaller, with one line on stderr, never an abort. Workers
  // get 1 MiB stacks, not the default 8: a kernel's locals are its accumulators (KiBs), and
  // 1,024 threads must not take the address space the plans' buffers need.
  constexpr size_t kStack = 1 << 20;
  // under an address-space limit, the stacks take at most a quarter of it
  if (rlimit as; getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const int most = static_cast<int>(std::clamp<rlim_t>(as.rlim_cur / 4 / kStack, 1, 1 << 20));
    if (threads > most) {
      std::fprintf(stderr,
                   "uopc: c plugin: the stacks of %d threads would take more than a quarter of "
                   "the address-space limit (ulimit -v %llu); kernels run on %d\n",
                   threads, static_cast<unsigned long long>(as.rlim_cur >> 10), most);
      threads = most;
    }
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStack);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);  // they sleep until the process ends
  int started = 1;
  for (; started < threads; ++started) {
    pthread_t id;
    const int error = pthread_create(
        &id, &attr, [](void* pool) -> void* { static_cast<ThreadPool*>(pool)->Work(); return nullptr; },
        this);
    if (error != 0) {
      std::fprintf(stderr,
                   "uopc: c plugin: %d of the %d threads asked for could be started (%s); "
                   "kernels run on %d (UOPC_THREADS sets how many)\n",
                   started, threads, std::strerror(error), started);
      break;
    }
  }
  pthread_attr_destroy(&attr);
  threads_ = started;
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

namespace {

// How long an idle worker, and a launcher whose chunks others still run, spin before they
// sleep: the kernels of a plan follow each other within microseconds, and a sleeping thread
// takes tens of them to wake (more on a virtual machine), at every kernel. OpenMP's workers
// (PyTorch's) spin the same way, for longer.
constexpr auto kSpin = std::chrono::microseconds(200);

void Relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until `ready()` or kSpin has passed; whether it became ready. Every 64 pauses it
// yields the core to any other thread that wants it: the host thread preparing the next step
// waited behind a spinning worker (a batched decode step of the bench GPT on 2 cores, 1.07x
// faster with the yield, medians of 6 rounds alternating, AMD EPYC Zen 3).
template <typename F>
bool SpinUntil(F ready) {
  const auto end = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    Relax();
    if ((i & 63) != 63) continue;
    if (std::chrono::steady_clock::now() >= end) return ready();
    sched_yield();
  }
}

}  // namespace

void ThreadPool::Work() {
  uint64_t seen = 0;    // how many jobs had been posted when this worker last looked
  bool again = false;  // a job was all taken: the next one may be there already
  for (;;) {
    if (!again) SpinUntil([&] { return posted_.load(std::memory_order_acquire) != seen; });
    again = false;
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (jobs_.empty()) {
        ++sleeping_;
        const uint64_t woken = wakes_;
        wake_.wait(lock, [&] { return !jobs_.empty() || wakes_ != woken; });
        --sleeping_;
        wakeups_.fetch_add(1, std::memory_order_relaxed);
        if (jobs_.empty()) {  // (woken ahead of a job: spin for it)
          seen = posted_.load(std::memory_order_relaxed);
          continue;
        }
      }
      seen = posted_.load(std::memory_order_relaxed);
      job = jobs_.front();
      if (job->next.load(std::memory_order_relaxed) >= job->n) {  // all its chunks taken
        jobs_.pop_front();
        again = true;
        continue;
      }
    }
    job->Run();
  }
}

void ThreadPool::Wake() {
  if (sleeping_.load(std::memory_order_relaxed) == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++wakes_;
  }
  wake_.notify_all();
}

void ThreadPool::ParallelFor(int n, const std::function<void(int)>& fn) {
  if (n <= 1 || threads_ == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(job);
    posted_.fetch_add(1, std::memory_order_release);
    wake = sleeping_ > 0;  // (a spinning worker sees posted_ move)
  }
  if (wake) wake_.notify_all();
  job->Run();
  if (!SpinUntil([&] { return job->done.load(std::memory_order_acquire) == n; })) {
    std::unique_lock<std::mutex> lock(job->mu);
    job->finished.wait(lock, [&] { return job->done.load(std::memory_order_acquire) == n; });
  }
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.erase(std::remove(jobs_.begin(), jobs_.end(), job), jobs_.end());
}

}  // namespace uopc::cpu
