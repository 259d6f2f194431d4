#include "distributed/shm_link.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

#include "distributed/peer_address.h"

namespace uopc {
namespace {

constexpr uint64_t kMagic = 0x6b6e696c6d687375;  // "ushmlink"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kSlots = 8;
constexpr size_t kPage = 4096;
// memory is reserved a slot at a time in steps of this (a syscall per step, not per frame)
constexpr uint64_t kReserveStep = 1 << 20;

using Word = std::atomic<uint32_t>;
static_assert(sizeof(Word) == 4 && Word::is_always_lock_free, "futex words are plain u32");

/// The file's first page; the slots follow, each `slot_bytes` long.
struct Control {
  uint64_t magic;
  uint32_t version, slots;
  uint64_t slot_bytes;
  Word events;             // +1 at every publish, starve and Wake: the reader waits on it
  Word published;          // frames published so far
  Word freed;              // +1 at every release of a slot: the writer waits on it
  Word starving;           // 1 while the writer finds no free slot
  Word attached;           // 1 once the reader has mapped the file
  uint32_t order[kSlots];  // the slot of frame n, at n % kSlots
  Word full[kSlots];       // 1 from publish to release
  uint64_t length[kSlots];
};
static_assert(sizeof(Control) <= kPage);

// What this process copied out of its memory into any link happens before what it reads
// from any link afterwards: true through the peers (a frame that comes back follows from
// those that went out, as the ring's all-gather overwrites what its reduce-scatter sent),
// but out of sight of a race detector, which sees one process. One atomic shows it the
// order, for a locked add a frame.
std::atomic<uint64_t> g_order{0};

void Wait(Word* w, uint32_t expected, std::chrono::milliseconds t) {
  timespec ts{static_cast<time_t>(t.count() / 1000), static_cast<long>(t.count() % 1000) * 1000000};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void WakeAll(Word* w) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

struct ShmRegion {
  void* base = MAP_FAILED;
  size_t size = 0;
  uint64_t slot_bytes = 0;  // (a copy: what the other process writes is not trusted)
  ~ShmRegion() {
    if (base != MAP_FAILED) munmap(base, size);
  }
  Control& c() const { return *static_cast<Control*>(base); }
  char* slot(uint32_t i) const {
    return static_cast<char*>(base) + kPage + static_cast<size_t>(i) * slot_bytes;
  }
};

namespace {

absl::StatusOr<std::shared_ptr<ShmRegion>> Map(int fd, size_t size, const std::string& name) {
  auto r = std::make_shared<ShmRegion>();
  r->base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (r->base == MAP_FAILED)
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map shared memory ", name, " (", size, " bytes): ", strerror(errno)));
  r->size = size;
  return r;
}

/// What a frame's slice holds: the region (kept mapped) and the slot it frees.
struct Release {
  std::shared_ptr<ShmRegion> region;
  uint32_t slot;
  static void Free(void* p) {
    Release* r = static_cast<Release*>(p);
    Control& c = r->region->c();
    c.full[r->slot].store(0, std::memory_order_release);
    c.freed.fetch_add(1, std::memory_order_release);
    WakeAll(&c.freed);
    delete r;
  }
};

}  // namespace

// ---- the writer ----

ShmWriter::ShmWriter(std::shared_ptr<ShmRegion> region, std::string name, int fd)
    : region_(std::move(region)),
      name_(std::move(name)),
      fd_(fd),
      reserved_(new uint64_t[kSlots]()) {}

absl::StatusOr<std::unique_ptr<ShmWriter>> ShmWriter::Create(size_t max_frame) {
  const uint64_t slot_bytes = (max_frame + kPage - 1) / kPage * kPage;
  const size_t size = kPage + kSlots * slot_bytes;
  const std::string name = "/" + NewUnixName();
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return absl::UnavailableError(
        absl::StrCat("cannot make shared memory ", name, ": ", strerror(errno)));
  // the control page now; the slots' memory as they are used (ftruncate reserves none)
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 || posix_fallocate(fd, 0, kPage) != 0) {
    const int e = errno;
    close(fd), shm_unlink(name.c_str());
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot size shared memory ", name, ": ", strerror(e)));
  }
  absl::StatusOr<std::shared_ptr<ShmRegion>> r = Map(fd, size, name);
  if (!r.ok()) {
    close(fd), shm_unlink(name.c_str());
    return r.status();
  }
  Control& c = (*r)->c();
  (*r)->slot_bytes = slot_bytes;
  c.slots = kSlots;
  c.slot_bytes = slot_bytes;
  c.version = kVersion;
  std::atomic_thread_fence(std::memory_order_release);
  c.magic = kMagic;
  return std::unique_ptr<ShmWriter>(new ShmWriter(*std::move(r), name, fd));
}

ShmWriter::~ShmWriter() {
  // a reader that opened the file removed its name; else nobody will
  if (region_->c().attached.load(std::memory_order_acquire) == 0) shm_unlink(name_.c_str());
  close(fd_);
}

bool ShmWriter::WaitAttached(std::chrono::milliseconds timeout) {
  Control& c = region_->c();
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (c.attached.load(std::memory_order_acquire) == 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    Wait(&c.attached, 0, std::min(left, std::chrono::milliseconds(100)));
  }
  return true;
}

absl::Status ShmWriter::Write(const grpc::ByteBuffer& frame, const std::function<bool()>& go_on) {
  Control& c = region_->c();
  const uint64_t size = frame.Length();
  const uint64_t slot_bytes = region_->slot_bytes;
  if (size > slot_bytes)
    return absl::InvalidArgumentError(absl::StrCat("a frame of ", size, " bytes is larger than ",
                                                   name_, "'s slots (", slot_bytes, ")"));
  uint32_t slot = kSlots;
  for (;;) {
    const uint32_t freed = c.freed.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < kSlots && slot == kSlots; ++i)
      if (c.full[i].load(std::memory_order_acquire) == 0) slot = i;
    if (slot < kSlots) break;
    if (c.starving.exchange(1, std::memory_order_acq_rel) == 0) {
      c.events.fetch_add(1, std::memory_order_release);
      WakeAll(&c.events);
    }
    if (!go_on()) {
      c.starving.store(0, std::memory_order_release);
      return absl::CancelledError(absl::StrCat("no free slot in ", name_));
    }
    Wait(&c.freed, freed, std::chrono::milliseconds(20));
  }
  c.starving.store(0, std::memory_order_release);
  if (reserved_[slot] < size) {  // tmpfs memory now, or a clean error (never SIGBUS later)
    const uint64_t want =
        std::min<uint64_t>((size + kReserveStep - 1) / kReserveStep * kReserveStep, slot_bytes);
    if (int e = posix_fallocate(
            fd_, static_cast<off_t>(region_->slot(slot) - static_cast<char*>(region_->base)),
            static_cast<off_t>(want));
        e != 0)
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot reserve ", want, " bytes of ", name_, ": ", strerror(e)));
    reserved_[slot] = want;
  }
  std::vector<grpc::Slice> slices;
  (void)frame.Dump(&slices);  // references, not copies
  char* out = region_->slot(slot);
  for (const grpc::Slice& s : slices) {
    std::memcpy(out, s.begin(), s.size());
    out += s.size();
  }
  g_order.fetch_add(1, std::memory_order_release);
  const uint32_t n = c.published.load(std::memory_order_relaxed);
  c.length[slot] = size;
  c.full[slot].store(1, std::memory_order_relaxed);
  c.order[n % kSlots] = slot;
  c.published.store(n + 1, std::memory_order_release);
  c.events.fetch_add(1, std::memory_order_release);
  WakeAll(&c.events);
  return absl::OkStatus();
}

// ---- the reader ----

ShmReader::ShmReader(std::shared_ptr<ShmRegion> region) : region_(std::move(region)) {}

absl::StatusOr<std::unique_ptr<ShmReader>> ShmReader::Open(const std::string& name) {
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a shared memory name"));
  const int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return absl::UnavailableError(
        absl::StrCat("cannot open shared memory ", name, ": ", strerror(errno)));
  struct stat st;
  absl::StatusOr<std::shared_ptr<ShmRegion>> r =
      fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= kPage
          ? Map(fd, st.st_size, name)
          : absl::InvalidArgumentError(absl::StrCat("shared memory ", name, " is too small"));
  close(fd);
  shm_unlink(name.c_str());  // mapped: the name is no longer needed
  if (!r.ok()) return r.status();
  const Control& c = (*r)->c();
  if (c.magic != kMagic || c.version != kVersion || c.slots != kSlots ||
      c.slot_bytes != (st.st_size - kPage) / kSlots || (st.st_size - kPage) % kSlots != 0)
    return absl::InvalidArgumentError(
        absl::StrCat("shared memory ", name, " is not a uopc link of this version"));
  (*r)->slot_bytes = c.slot_bytes;
  (*r)->c().attached.store(1, std::memory_order_release);
  WakeAll(&(*r)->c().attached);
  return std::unique_ptr<ShmReader>(new ShmReader(*std::move(r)));
}

ShmReader::~ShmReader() = default;

absl::StatusOr<std::optional<grpc::ByteBuffer>> ShmReader::Next(std::chrono::milliseconds wait) {
  Control& c = region_->c();
  const uint32_t events = c.events.load(std::memory_order_acquire);
  if (c.published.load(std::memory_order_acquire) == popped_) {
    Wait(&c.events, events, wait);
    if (c.published.load(std::memory_order_acquire) == popped_) return std::nullopt;
  }
  const uint32_t slot = c.order[popped_ % kSlots];
  const uint64_t length = slot < kSlots ? c.length[slot] : 0;
  if (slot >= kSlots || length > region_->slot_bytes)
    return absl::DataLossError(absl::StrCat("shared memory link: frame ", popped_, " is in slot ",
                                            slot, " with ", length, " bytes (", kSlots,
                                            " slots of ", region_->slot_bytes, ")"));
  ++popped_;
  g_order.fetch_add(1, std::memory_order_acq_rel);
  grpc::Slice s(region_->slot(slot), length, &Release::Free, new Release{region_, slot});
  return std::optional<grpc::ByteBuffer>(grpc::ByteBuffer(&s, 1));
}

bool ShmReader::starving() const {
  return region_->c().starving.load(std::memory_order_acquire) != 0;
}

void ShmReader::Wake() {
  region_->c().events.fetch_add(1, std::memory_order_release);
  WakeAll(&region_->c().events);
}

}  // namespace uopc
