#include "distributed/mailbox.h"

#include <climits>

#include "absl/strings/str_cat.h"

namespace uopc {
namespace {

SegmentKey KeyOf(const wire::Frame& f) {
  bool p2p = f.op() == "send";
  return {f.from(), f.group(), p2p, f.collective(), p2p ? f.tag() : 0, f.step(), f.offset()};
}

std::string Describe(const std::string& op, const std::string& dtype, uint64_t count) {
  return absl::StrCat(op, " of ", count, " x ", dtype);
}

}  // namespace

absl::Status Mailbox::Deposit(InFrame in) {
  const wire::Frame& f = in.header;
  const int from = f.from();
  auto refuse = [&](const std::string& why) {
    std::string msg = absl::StrCat("rank ", from, " sent ", why);
    Broken(from, msg);
    return absl::InvalidArgumentError(msg);
  };
  if (from < 0 || from >= world_ || from == rank_)
    return absl::InvalidArgumentError(
        absl::StrCat("a frame from rank ", from, " (the job has ranks 0..", world_ - 1, ")"));
  if (f.op().empty() || f.dtype().empty()) return refuse("a malformed segment (no op or dtype)");
  const uint64_t n = f.elements(), bytes = in.payload_size, width = n ? bytes / n : 0;
  if (n == 0 ? bytes != 0
             : bytes % n != 0 || (width != 1 && width != 2 && width != 4 && width != 8))
    return refuse(absl::StrCat("a malformed segment: ", bytes, " bytes for ", n, " elements"));
  std::unique_lock<std::mutex> lock(mu_);
  SegmentKey key = KeyOf(f);
  if (frames_.count(key)) {
    lock.unlock();
    return refuse(absl::StrCat("a duplicate segment (", f.op(), " #", f.collective(), ", step ",
                               f.step(), ", offset ", f.offset(), ")"));
  }
  if (f.op() != "send")
    headers_.emplace(std::make_tuple(from, f.group(), f.collective()), f);  // the first one stays
  frames_.emplace(key, std::move(in));
  cv_.notify_all();
  return absl::OkStatus();
}

void Mailbox::Materialize(int from) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = frames_.lower_bound({from, 0, false, 0, INT_MIN, 0, 0});
       it != frames_.end() && std::get<0>(it->first) == from; ++it) {
    InFrame& f = it->second;
    if (!f.in_shared_memory) continue;
    grpc::Slice copy(f.bytes.Length());
    char* out = reinterpret_cast<char*>(const_cast<uint8_t*>(copy.begin()));
    std::vector<grpc::Slice> slices;
    (void)f.bytes.Dump(&slices);
    for (const grpc::Slice& s : slices) out = std::copy(s.begin(), s.end(), out);
    f.bytes = grpc::ByteBuffer(&copy, 1);  // the slot's last reference goes
    f.in_shared_memory = false;
  }
}

void Mailbox::Forget(uint32_t group, uint64_t collective) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int r = 0; r < world_; ++r) headers_.erase({r, group, collective});
}

void Mailbox::Bye(int from) {
  std::lock_guard<std::mutex> lock(mu_);
  if (from >= 0 && from < world_) closed_[from] = true;
  cv_.notify_all();
}

void Mailbox::Broken(int from, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (from >= 0 && from < world_ && broken_[from].empty() && !closed_[from]) broken_[from] = why;
  cv_.notify_all();
}

void Mailbox::Connected(int from, bool connected) {
  std::lock_guard<std::mutex> lock(mu_);
  if (from >= 0 && from < world_) connected_[from] = connected;
}

void Mailbox::Lost(int from, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (from >= 0 && from < world_ && connected_[from]) return;
  }
  Broken(from, why);
}

void Mailbox::Abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (abort_.empty()) abort_ = why;
  cv_.notify_all();
}

std::string Mailbox::aborted() {
  std::lock_guard<std::mutex> lock(mu_);
  return abort_;
}

absl::Status Mailbox::CheckHeader(const wire::Frame& f, const Expect& e) const {
  if (f.op() != e.op || f.dtype() != e.dtype || f.count() != e.count)
    return absl::FailedPreconditionError(
        absl::StrCat("mismatched collectives: rank ", f.from(), " called ",
                     Describe(f.op(), f.dtype(), f.count()), " as collective #", f.collective(),
                     " while this rank called ", Describe(e.op, e.dtype, e.count)));
  return absl::OkStatus();
}

absl::StatusOr<InFrame> Mailbox::Take(const SegmentKey& key, const Expect& e,
                                      std::chrono::steady_clock::time_point deadline) {
  const int from = std::get<0>(key);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (auto it = frames_.find(key); it != frames_.end()) {
      InFrame in = std::move(it->second);
      frames_.erase(it);
      const wire::Frame& f = in.header;
      if (absl::Status s = CheckHeader(f, e); !s.ok()) return s;
      if (f.elements() != e.elements || in.payload_size != e.bytes)
        return absl::InvalidArgumentError(absl::StrCat(
            "rank ", from, " sent a wrongly sized segment in ", e.what, ": ", f.elements(),
            " elements in ", in.payload_size, " bytes; expected ", e.elements, " in ", e.bytes));
      return in;
    }
    if (!std::get<2>(key)) {
      auto h = headers_.find({from, std::get<1>(key), std::get<3>(key)});
      if (h != headers_.end())
        if (absl::Status s = CheckHeader(h->second, e); !s.ok()) return s;
    }
    if (!abort_.empty()) return absl::AbortedError(abort_);
    if (!broken_[from].empty())
      return absl::UnavailableError(absl::StrCat(broken_[from], " during ", e.what));
    if (closed_[from])
      return absl::UnavailableError(
          absl::StrCat("rank ", from, " closed its connection during ", e.what));
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= deadline && !frames_.count(key))
      return absl::DeadlineExceededError(
          absl::StrCat("timed out waiting for rank ", from, " in ", e.what, " (rank ", from,
                       " is stalled, slow or not in this collective)"));
  }
}

}  // namespace uopc
