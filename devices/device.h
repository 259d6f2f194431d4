// Device: one device of a loaded plugin, with its default queue, its caching allocator
// and the backend that compiles for it. Everything returns absl::Status; the plugin's
// errors come back with their codes and messages.
//
// Work is queued: Launch and the Enqueue* copies return an Event and may complete after the
// call (on devices with UOPC_DEVICE_CAP_ASYNC); work on one device runs in the order it was
// queued, and Wait orders this device's later work after an event of another device of the
// same plugin. CopyIn and CopyOut are the host's synchronous copies: they return once done.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "core/dtype.h"
#include "core/kernel_signature.h"
#include "core/target.h"
#include "devices/allocator.h"
#include "devices/buffer.h"
#include "devices/event.h"
#include "devices/plugin.h"

namespace uopc {

/// A compiled program loaded on a device: its entries by name, in compile order.
class Program {
 public:
  Program(const Plugin& plugin, uopc_program* handle, std::vector<std::string> entries)
      : plugin_(plugin), handle_(handle), entries_(std::move(entries)) {}
  ~Program();
  uopc_program* handle() const { return handle_; }
  const std::vector<std::string>& entries() const { return entries_; }

 private:
  const Plugin& plugin_;
  uopc_program* handle_;
  std::vector<std::string> entries_;
};

/// A kernel's source as a backend renders it, with the launch dims it is written for.
struct RenderedKernel {
  std::string source;
  LaunchDims dims;
  uint64_t shared_bytes = 0;
};

/// A plugin's target description (ABI 1.4) as a Target; FailedPrecondition names what the
/// plugin got wrong (an unknown class, a matrix unit that does not parse).
absl::StatusOr<Target> TargetFromArgs(const uopc_target_args& args);

class Device {
 public:
  /// The device `index` of `plugin`; its backend is the plugin's backend it names.
  static absl::StatusOr<std::unique_ptr<Device>> Open(const Plugin& plugin, uint32_t index);
  /// Device `like` of another process of the job, rank `rank` ("rank1/CPU:0"), as this
  /// process sees it: of `like`'s plugin, kind and type, with no memory and no queue. Its
  /// buffers hold nothing here (the rank that owns the device holds their contents), and
  /// what would read or write them fails, naming the rank. Plans skip its kernels; a copy
  /// to or from it is a message to or from its rank (runtime/peer_link.h).
  static std::unique_ptr<Device> Peer(int rank, const Device& like);
  ~Device();

  const std::string& name() const { return name_; }
  /// The job rank a device of another process is on (Peer); -1 for this process's devices.
  int peer_rank() const { return peer_rank_; }
  const std::string& kind() const { return kind_; }
  const std::string& uid() const { return uid_; }
  uint64_t mem_total() const { return mem_total_; }
  /// What its kernels are compiled for (ABI 1.4's backend_target; before it, the reference
  /// target of the device's type). The lowering passes shape its kernels by it.
  const Target& target() const { return target_; }
  /// Whether its backend takes kernels with their launch mapped by the host's target passes
  /// (ABI 1.5: passes/thread_outer_loop.h, passes/launch_dims.h); older ones map their own.
  bool TakesMappedLaunch() const { return plugin_.TakesMappedLaunch(); }
  /// UOPC_DEVICE_CAP_* bits.
  uint64_t caps() const { return caps_; }
  /// UOPC_DEVICE_CPU, _GPU, ...
  uopc_device_type type() const { return type_; }
  const Plugin& plugin() const { return plugin_; }
  /// "c-gcc"; empty if the plugin compiles nothing for this device.
  const std::string& backend_name() const { return backend_name_; }
  /// What a cache of compiled programs must key on besides the kernel.
  const std::string& backend_fingerprint() const { return fingerprint_; }
  CachingAllocator& allocator() { return allocator_; }
  /// The plugin's handles, for code that talks to the plugin directly (the conformance suite).
  uopc_device* handle() const { return handle_; }
  uopc_queue* queue() const { return queue_; }
  uopc_backend* backend() const { return backend_; }

  /// `count` elements of `dtype` (contents undefined).
  absl::StatusOr<Buffer> Allocate(DType dtype, int64_t count);
  /// Host -> device, `bytes` bytes at byte `offset` of `dst`; returns once done.
  absl::Status CopyIn(const Buffer& dst, const void* src, uint64_t bytes, uint64_t offset = 0);
  /// Device -> host; returns once done.
  absl::Status CopyOut(void* dst, const Buffer& src, uint64_t bytes, uint64_t offset = 0);
  /// Queues host -> device; `src` must stay valid until the event completes.
  absl::StatusOr<Event> EnqueueCopyIn(const Buffer& dst, const void* src, uint64_t bytes,
                                      uint64_t offset = 0);
  /// Queues device -> host; `dst` holds the bytes once the event completes.
  absl::StatusOr<Event> EnqueueCopyOut(void* dst, const Buffer& src, uint64_t bytes,
                                       uint64_t offset = 0);
  /// Queues a copy between two buffers of this device's plugin (this device or a peer of
  /// it) on this device's queue.
  absl::StatusOr<Event> EnqueueCopy(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                                    uint64_t src_offset, uint64_t bytes);
  /// Later work on this device waits for `event` (of this device's plugin).
  absl::Status Wait(const Event& event);
  /// Waits for all work queued on this device; the first failure of that work, if any (a
  /// device without UOPC_DEVICE_CAP_ASYNC has nothing to wait for).
  absl::Status Synchronize();
  /// Bytes in use and the limit, as the plugin accounts them (ABI 1.1).
  struct MemoryInfo {
    uint64_t bytes_in_use = 0, bytes_limit = 0;
  };
  absl::StatusOr<MemoryInfo> Memory() const;
  /// Where `buffer`'s memory is as this device addresses it: a host pointer for a CPU, a
  /// device pointer for a GPU (ABI 1.3; UNIMPLEMENTED where there is none, as on a remote
  /// device). Work queued on the buffer may still be running: synchronize first.
  absl::StatusOr<void*> Address(const Buffer& buffer) const;
  /// A buffer of `count` elements of `dtype` over memory its caller owns at `address`
  /// (ABI 1.3). release(release_ctx) runs exactly once, when the last copy of the Buffer is
  /// gone and its queued work done; never when Wrap fails.
  absl::StatusOr<Buffer> Wrap(void* address, DType dtype, int64_t count,
                              void (*release)(void*), void* release_ctx);

  /// The source of `kernel` (serialized core/uop.proto) as function `name`, and its launch
  /// dims (ABI 1.1's render_kernel; an older backend's kernels launch as {1,1,1}).
  absl::StatusOr<RenderedKernel> Render(const std::string& kernel, const std::string& name);
  /// One program from several rendered sources (one backend compile call), loaded here.
  absl::StatusOr<std::shared_ptr<Program>> Build(const std::vector<std::string>& sources,
                                                 const std::vector<std::string>& entries);
  /// Queues entry `entry` of `program` with buffers by slot (null: unused), optional byte
  /// offsets into them (empty: all 0), VAR values and launch dims.
  absl::StatusOr<Event> Launch(const Program& program, uint32_t entry,
                               absl::Span<uopc_buffer* const> buffers,
                               absl::Span<const int64_t> vars,
                               absl::Span<const uint64_t> offsets = {}, const LaunchDims& dims = {});
  /// Queues the kernel `name` that the plugin supplies (one of target().kernels: ABI 2.1's
  /// kernel_launch) with buffers and params as its op defines them.
  absl::StatusOr<Event> LaunchSupplied(const std::string& name,
                                       absl::Span<uopc_buffer* const> buffers,
                                       absl::Span<const uint64_t> offsets,
                                       absl::Span<const int64_t> params);

 private:
  Device(const Plugin& plugin, uopc_device* handle)
      : plugin_(plugin), handle_(handle), allocator_(plugin, handle) {}
  absl::Status CheckRange(const char* what, const Buffer& b, uint64_t bytes,
                          uint64_t offset) const;
  /// FAILED_PRECONDITION for a peer device: `what` needs its memory, which is in another process.
  absl::Status Here(const char* what) const;

  const Plugin& plugin_;
  uopc_device* handle_;
  uopc_queue* queue_ = nullptr;
  uopc_backend* backend_ = nullptr;
  std::string name_, kind_, uid_, backend_name_, fingerprint_;
  Target target_;
  uint64_t mem_total_ = 0, caps_ = 0;
  uopc_device_type type_ = UOPC_DEVICE_CPU;
  int peer_rank_ = -1;
  CachingAllocator allocator_;
};

}  // namespace uopc
