#include "backends/remote/remote_queue.h"

#include "absl/strings/str_cat.h"

namespace uopc {
namespace {

constexpr int kBatchCommands = 256;
constexpr uint64_t kBatchBytes = 1 << 20;

}  // namespace

absl::StatusOr<std::shared_ptr<RemoteQueue>> RemoteQueue::Create(
    std::shared_ptr<RemoteSession> session) {
  if (session->lost()) return session->LostStatus();
  std::shared_ptr<RemoteQueue> q(new RemoteQueue(std::move(session)));
  q->ctx_ = q->session_->Context(std::chrono::hours(24 * 365));  // as long as the queue lives
  q->stream_ = q->session_->stub().Run(q->ctx_.get());
  if (!q->stream_) return absl::InternalError("remote queue: no stream");
  q->reader_ = std::thread([raw = q.get()] { raw->Read(); });
  q->writer_ = std::thread([raw = q.get()] { raw->Write(); });
  return q;
}

RemoteQueue::~RemoteQueue() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    SendLocked(false);
    closing_ = true;
    changed_.notify_all();
  }
  writer_.join();
  {
    // the server finishes the commands sent, then ends the stream; one that does not answer
    // is cut off
    std::unique_lock<std::mutex> lock(mu_);
    if (!changed_.wait_for(lock, std::chrono::seconds(5), [&] { return read_done_; }))
      ctx_->TryCancel();
  }
  reader_.join();
}

void RemoteQueue::SendLocked(bool sync) {
  if (pending_.commands().empty() && !sync) return;
  if (first_) pending_.set_session(session_->id());
  first_ = false;
  pending_.set_sync(sync);
  if (!pending_.commands().empty()) sent_ = pending_.commands().rbegin()->seq();
  if (sync) sync_asked_ = next_seq_ - 1;
  outbox_.push_back(std::move(pending_));
  pending_ = remote::Batch();
  pending_bytes_ = 0;
  changed_.notify_all();
}

void RemoteQueue::Write() {
  for (;;) {
    remote::Batch b;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return !outbox_.empty() || closing_ || ended_; });
      if (outbox_.empty() || ended_) break;
      b = std::move(outbox_.front());
      outbox_.pop_front();
    }
    if (!stream_->Write(b)) break;  // the stream is broken: the reader finds out why
  }
  stream_->WritesDone();
}

void RemoteQueue::Read() {
  remote::Reply r;
  while (stream_->Read(&r)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (r.data_seq() != 0) {
      auto it = outs_.find(r.data_seq());
      if (it != outs_.end()) {
        if (r.data().size() == it->second.second)
          std::memcpy(it->second.first, r.data().data(), r.data().size());
        else if (failure_.ok()) {
          failure_ = absl::DataLossError(absl::StrCat(session_->name(), ": a copy out of ",
                                                      it->second.second, " bytes got ",
                                                      r.data().size()));
          failed_seq_ = r.data_seq();
        }
        outs_.erase(it);
      }
    }
    if (r.code() != 0 && failure_.ok()) {
      failure_ = absl::Status(static_cast<absl::StatusCode>(r.code()),
                              absl::StrCat(session_->name(), ": ", r.message()));
      failed_seq_ = r.failed_seq();
    }
    if (r.synced()) synced_ = std::max(synced_, r.done());
    changed_.notify_all();
  }
  grpc::Status s = stream_->Finish();
  if (s.ok()) s = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server ended the queue");
  std::lock_guard<std::mutex> lock(mu_);
  if (!closing_) session_->Failed(s, "queue").IgnoreError();
  ended_ = true;
  read_done_ = true;
  changed_.notify_all();
}

absl::Status RemoteQueue::StatusFor(uint64_t seq) const {
  if (!failure_.ok() && failed_seq_ <= seq) return failure_;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RemoteQueue::Push(remote::Command c, void* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_ || session_->lost()) return session_->LostStatus();
  uint64_t seq = next_seq_++;
  c.set_seq(seq);
  if (c.has_copy_out()) outs_[seq] = {out, c.copy_out().size()};
  pending_bytes_ += c.has_copy_in() ? c.copy_in().data().size() : 0;
  *pending_.add_commands() = std::move(c);
  if (pending_.commands().size() >= kBatchCommands || pending_bytes_ >= kBatchBytes)
    SendLocked(false);
  return seq;
}

absl::Status RemoteQueue::Wait(uint64_t seq, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (synced_ < seq && !ended_ && sync_asked_ < seq) SendLocked(true);
  if (!changed_.wait_for(lock, timeout, [&] { return synced_ >= seq || ended_; }))
    return absl::DeadlineExceededError(absl::StrCat(session_->name(), " (", session_->address(),
                                                    "): no answer in ", timeout.count(), " ms"));
  if (synced_ < seq) return session_->LostStatus();
  return StatusFor(seq);
}

absl::StatusOr<bool> RemoteQueue::Query(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  if (synced_ >= seq) {
    if (absl::Status s = StatusFor(seq); !s.ok()) return s;
    return true;
  }
  if (ended_) return session_->LostStatus();
  if (sync_asked_ < seq) SendLocked(true);
  return false;
}

absl::Status RemoteQueue::Synchronize() {
  uint64_t last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = next_seq_ - 1;
    if (last == 0) return absl::OkStatus();
  }
  absl::Status s = Wait(last, session_->options().timeout);
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.ok()) {  // reported once
    s = failure_;
    failure_ = absl::OkStatus();
    failed_seq_ = 0;
  }
  return s;
}

}  // namespace uopc
