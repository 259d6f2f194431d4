#include "backends/c/work_queue.h"

#include <algorithm>
#include <chrono>

namespace uopc {

namespace {

// Polls `ready` for up to kSpin (and no longer than `limit`); whether it became true.
template <typename F>
bool Poll(F ready, std::chrono::nanoseconds limit = kSpin) {
  auto end = std::chrono::steady_clock::now() + std::min<std::chrono::nanoseconds>(limit, kSpin);
  do {
    if (ready()) return true;
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < end);
  return ready();
}

}  // namespace

void Completion::Complete(WorkStatus status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = std::move(status);
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

bool Completion::Wait(uint64_t timeout_ns, WorkStatus* out) {
  const bool forever = timeout_ns == ~uint64_t{0};
  if (!Poll([&] { return Done(); }, forever ? kSpin : std::chrono::nanoseconds(timeout_ns))) {
    std::unique_lock<std::mutex> lock(mu_);
    if (forever)
      cv_.wait(lock, [&] { return Done(); });
    else if (!cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [&] { return Done(); }))
      return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  *out = status_;
  return true;
}

WorkQueue::WorkQueue() : thread_([this] { Loop(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();  // (a polling worker wakes by itself within kSpin)
  thread_.join();
}

void WorkQueue::Push(std::function<WorkStatus()> work, std::shared_ptr<Completion> done) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back({std::move(work), std::move(done)});
    queued_.store(items_.size(), std::memory_order_release);
    idle_now_.store(false, std::memory_order_release);
    wake = sleeping_;
  }
  if (wake) wake_.notify_one();  // a polling worker sees queued_ without a system call
}

void WorkQueue::RunOrPush(std::function<WorkStatus()> work, std::shared_ptr<Completion> done) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!items_.empty() || busy_) {
    lock.unlock();
    return Push(std::move(work), std::move(done));
  }
  busy_ = true;
  idle_now_.store(false, std::memory_order_release);
  WorkStatus failed = failure_;
  lock.unlock();
  WorkStatus s = failed.ok() ? work() : std::move(failed);
  if (done) done->Complete(s);
  lock.lock();
  if (!s.ok() && failure_.ok()) failure_ = std::move(s);
  busy_ = false;
  if (items_.empty()) {
    idle_now_.store(true, std::memory_order_release);
    idle_.notify_all();
  }
}

WorkStatus WorkQueue::Synchronize() {
  Poll([&] { return idle_now_.load(std::memory_order_acquire); });
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return items_.empty() && !busy_; });
  WorkStatus s = std::move(failure_);
  failure_ = {};
  return s;
}

void WorkQueue::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (items_.empty() && !stop_) {
      lock.unlock();
      Poll([&] { return queued_.load(std::memory_order_acquire) != 0; });
      lock.lock();
      sleeping_ = true;
      wake_.wait(lock, [&] { return stop_ || !items_.empty(); });
      sleeping_ = false;
    }
    if (items_.empty()) return;  // stopping, and everything queued has run
    Item item = std::move(items_.front());
    items_.pop_front();
    queued_.store(items_.size(), std::memory_order_release);
    busy_ = true;
    WorkStatus failed = failure_;
    lock.unlock();
    WorkStatus s = failed.ok() ? item.work() : std::move(failed);
    if (item.done) item.done->Complete(s);
    item = {};  // drops what the work held (buffer references) before the queue looks idle
    lock.lock();
    if (!s.ok() && failure_.ok()) failure_ = std::move(s);
    busy_ = false;
    if (items_.empty()) {
      idle_now_.store(true, std::memory_order_release);
      idle_.notify_all();
    }
  }
}

}  // namespace uopc
