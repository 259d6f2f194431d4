// The receiving side of the data plane: segments that peers pushed, by (sender, group,
// collective, step, offset), until the collective that expects them takes them. It also
// holds what makes a wait fail early instead of hanging: a peer whose stream broke, an
// abort another rank sent, a peer that is in another collective than this rank.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "distributed/frame_codec.h"
#include "distributed/wire.pb.h"

namespace uopc {

/// Which segment: (sender, group, point-to-point?, sequence, tag, step, offset).
using SegmentKey = std::tuple<int, uint32_t, bool, uint64_t, int, uint32_t, uint64_t>;

/// What the receiving collective expects of a segment.
struct Expect {
  std::string op, dtype;
  uint64_t count = 0, elements = 0, bytes = 0;
  std::string what;  // "all_reduce #5 (step 2 of 6)", for errors
};

class Mailbox {
 public:
  Mailbox(int rank, int world_size) : rank_(rank), world_(world_size), broken_(world_size) {}

  /// Stores a frame from a stream; an error (malformed, duplicated) also breaks the sender.
  absl::Status Deposit(InFrame frame);
  /// Copies the frames from `from` that lie in shared memory out of it, freeing their slots
  /// for the sender (which waits for one).
  void Materialize(int from);
  /// Collective `collective` of `group` is done here: drops what was kept to check its headers.
  void Forget(uint32_t group, uint64_t collective);
  /// The sender closed its stream cleanly.
  void Bye(int from);
  /// The sender's stream broke, or sending to it failed: waits on it fail with `why`.
  void Broken(int from, const std::string& why);
  /// A stream from `from` began, or ended.
  void Connected(int from, bool connected);
  /// Sending to `from` found it gone: Broken, unless its stream to this rank is up (whose end
  /// says so once every frame that came before it is here).
  void Lost(int from, const std::string& why);
  /// Another rank aborted: every wait fails with `why`.
  void Abort(const std::string& why);
  /// The segment `key`, checked against `expect`, waiting until `deadline`.
  absl::StatusOr<InFrame> Take(const SegmentKey& key, const Expect& expect,
                               std::chrono::steady_clock::time_point deadline);
  /// The abort reason, if any.
  std::string aborted();

 private:
  absl::Status CheckHeader(const wire::Frame& f, const Expect& e) const;

  int rank_, world_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<SegmentKey, InFrame> frames_;
  // the first header seen of each (sender, group, collective): a peer in another collective
  std::map<std::tuple<int, uint32_t, uint64_t>, wire::Frame> headers_;
  std::vector<std::string> broken_;
  std::vector<bool> closed_ = std::vector<bool>(world_, false);
  std::vector<bool> connected_ = std::vector<bool>(world_, false);
  std::string abort_;
};

}  // namespace uopc
