// Frames from one process to another on the same host through shared memory, without the
// kernel's two copies of a socket. A file in /dev/shm holds a few slots of one frame each;
// the writer copies a frame into a free slot and publishes it, and the reader hands the
// slot to the mailbox as it lies (a gRPC slice whose release frees the slot). The two sides
// wait on futexes in the shared file. The slots are few: when the writer finds none free,
// it says so (starving()), and the reader copies the frames that the mailbox holds out of
// their slots (Mailbox::Materialize), so a receiver that takes frames in another order
// than they came never stalls its sender for good.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/statusor.h"

namespace uopc {

struct ShmRegion;  // the mapped file (shm_link.cc)

class ShmWriter {
 public:
  /// A new file in /dev/shm (unguessable name, mode 0600) with room for frames of up to
  /// `max_frame` bytes; memory is reserved as slots are first used.
  static absl::StatusOr<std::unique_ptr<ShmWriter>> Create(size_t max_frame);
  ~ShmWriter();

  /// The file's name, for the reader's Open.
  const std::string& name() const { return name_; }
  /// Waits until the reader has opened the file, or `timeout` passes (false).
  bool WaitAttached(std::chrono::milliseconds timeout);
  /// Copies `frame` into a free slot and publishes it. Waits for a slot while `go_on()`
  /// (asked every few milliseconds) says the reader may still free one. Errors: the frame
  /// is larger than a slot, or no memory could be reserved for it (nothing was published:
  /// the caller may send it another way); Cancelled: `go_on()` said stop.
  absl::Status Write(const grpc::ByteBuffer& frame, const std::function<bool()>& go_on);

 private:
  ShmWriter(std::shared_ptr<ShmRegion> region, std::string name, int fd);
  std::shared_ptr<ShmRegion> region_;
  std::string name_;
  int fd_;
  std::unique_ptr<uint64_t[]> reserved_;  // bytes of each slot reserved so far
};

class ShmReader {
 public:
  /// Maps the file a writer made and removes its name (the mapping keeps it).
  static absl::StatusOr<std::unique_ptr<ShmReader>> Open(const std::string& name);
  ~ShmReader();

  /// The next frame, waiting up to `wait` (nullopt: none came, or Wake() was called). Its
  /// bytes lie in the slot until the last reference to them goes. An error: the file says
  /// something no writer writes.
  absl::StatusOr<std::optional<grpc::ByteBuffer>> Next(std::chrono::milliseconds wait);
  /// The writer waits for a free slot.
  bool starving() const;
  /// Ends a Next() that waits (from another thread).
  void Wake();

 private:
  explicit ShmReader(std::shared_ptr<ShmRegion> region);
  std::shared_ptr<ShmRegion> region_;
  uint32_t popped_ = 0;
};

}  // namespace uopc
