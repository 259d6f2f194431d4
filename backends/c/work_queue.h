// WorkQueue: an in-order queue of host work, run by a thread of its own, and Completion,
// the shared state of the events its work completes. The CPU device's queues are these:
// the host enqueues kernels and copies and goes on while the worker runs them, so that two
// devices (two queues) work at the same time and a copy on one overlaps a kernel on another.
//
// Work returns a WorkStatus. After a failure, the work queued behind it is skipped and
// completes with the same failure, until Synchronize reports it (the queue's work is a
// sequence: what follows a failed step would read what the step did not write).
//
// Handing work to a sleeping thread costs tens of microseconds on a loaded machine, more
// than a small kernel runs; so a worker that runs out of work, and a host that waits for
// an event or for the queue, first poll for a short while (kSpin, yielding the core each
// time) and only then sleep on a condition variable. An idle worker does sleep: no core is held by a queue
// that has nothing to do.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "backends/plugin_api.h"

namespace uopc {

/// The outcome of one piece of work: UOPC_OK, or a code and a message.
struct WorkStatus {
  uopc_code code = UOPC_OK;
  std::string message;
  bool ok() const { return code == UOPC_OK; }
};

/// How long a worker or a waiter polls before it sleeps.
inline constexpr std::chrono::microseconds kSpin{50};

/// Completes once, with a status; any number of threads may wait for it.
class Completion {
 public:
  void Complete(WorkStatus status);
  /// Waits up to `timeout_ns` (~0: forever); false on timeout, else the status in `out`.
  bool Wait(uint64_t timeout_ns, WorkStatus* out);
  bool Done() const { return done_.load(std::memory_order_acquire); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> done_{false};
  WorkStatus status_;  // written before done_
};

class WorkQueue {
 public:
  WorkQueue();
  /// Runs what is queued, then joins the worker.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  /// Queues `work`; `done` (may be null) completes with its status.
  void Push(std::function<WorkStatus()> work, std::shared_ptr<Completion> done);
  /// Runs `work` on the calling thread if the queue is idle (nothing queued, nothing
  /// running: the order is the same), else queues it. For work the caller would wait for at
  /// once (a copy to or from host memory): no handoff to the worker and back. The caller
  /// must be the queue's only user at the time (the ABI's rule for queues).
  void RunOrPush(std::function<WorkStatus()> work, std::shared_ptr<Completion> done);
  /// Waits for all work queued so far; the first failure since the last call (cleared).
  WorkStatus Synchronize();

 private:
  struct Item {
    std::function<WorkStatus()> work;
    std::shared_ptr<Completion> done;
  };
  void Loop();

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Item> items_;
  std::atomic<size_t> queued_{0};   // items_.size(), readable without the lock
  std::atomic<bool> idle_now_{true};  // items_.empty() && !busy_, readable without the lock
  bool busy_ = false, stop_ = false, sleeping_ = false;
  WorkStatus failure_;  // the first failure since Synchronize
  std::thread thread_;
};

}  // namespace uopc
