#include "backends/c/work_queue.h"

#include <chrono>

namespace uopc {

void Completion::Complete(WorkStatus status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    status_ = std::move(status);
  }
  cv_.notify_all();
}

bool Completion::Wait(uint64_t timeout_ns, WorkStatus* out) {
  std::unique_lock<std::mutex> lock(mu_);
  if (timeout_ns == ~uint64_t{0}) {
    cv_.wait(lock, [&] { return done_; });
  } else if (!cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [&] { return done_; })) {
    return false;
  }
  *out = status_;
  return true;
}

bool Completion::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

WorkQueue::WorkQueue() : thread_([this] { Loop(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void WorkQueue::Push(std::function<WorkStatus()> work, std::shared_ptr<Completion> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back({std::move(work), std::move(done)});
  }
  wake_.notify_one();
}

WorkStatus WorkQueue::Synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return items_.empty() && !busy_; });
  WorkStatus s = std::move(failure_);
  failure_ = {};
  return s;
}

void WorkQueue::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !items_.empty(); });
    if (items_.empty()) return;  // stopping, and everything queued has run
    Item item = std::move(items_.front());
    items_.pop_front();
    busy_ = true;
    WorkStatus failed = failure_;
    lock.unlock();
    WorkStatus s = failed.ok() ? item.work() : std::move(failed);
    if (item.done) item.done->Complete(s);
    item = {};  // drops what the work held (buffer references) before the queue looks idle
    lock.lock();
    if (!s.ok() && failure_.ok()) failure_ = std::move(s);
    busy_ = false;
    if (items_.empty()) idle_.notify_all();
  }
}

}  // namespace uopc
