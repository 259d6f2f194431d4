// The shared-memory link of ranks on one host: a writer and a reader on one file in
// /dev/shm (here in one process, on two threads; the ranks' tests run them in two).
#include "distributed/shm_link.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "distributed/frame_codec.h"
#include "distributed/mailbox.h"
#include "tests/distributed/link_frames.h"

namespace uopc {
namespace {

using std::chrono::milliseconds;

bool Exists(const std::string& name) { return access(("/dev/shm" + name).c_str(), F_OK) == 0; }

const auto kAlways = [] { return true; };

struct Link {
  std::unique_ptr<ShmWriter> out;
  std::unique_ptr<ShmReader> in;
};

Link Open(size_t max_frame) {
  absl::StatusOr<std::unique_ptr<ShmWriter>> w = ShmWriter::Create(max_frame);
  EXPECT_TRUE(w.ok()) << w.status();
  absl::StatusOr<std::unique_ptr<ShmReader>> r = ShmReader::Open((*w)->name());
  EXPECT_TRUE(r.ok()) << r.status();
  return {*std::move(w), *std::move(r)};
}

// Frames of every size up to a slot's arrive in order with their bytes; each frees its
// slot when its last reference goes, so 40 frames pass through 8 slots.
TEST(ShmLink, FramesArriveInOrderWithTheirBytes) {
  Link l = Open(1 << 20);
  constexpr int kFrames = 40;
  auto size = [](int i) { return static_cast<size_t>(i * 7919 * 13) % (1 << 20) + 1; };
  std::thread writer([&] {
    for (int i = 0; i < kFrames; ++i) EXPECT_TRUE(l.out->Write(Bytes(size(i), i), kAlways).ok());
  });
  for (int i = 0; i < kFrames; ++i)
    EXPECT_EQ(Contents(Take(*l.in)), Contents(Bytes(size(i), i))) << i;
  writer.join();
  absl::StatusOr<std::optional<grpc::ByteBuffer>> none = l.in->Next(milliseconds(10));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
}

// With every slot held, a write says it starves and waits while its go_on says so; a slot
// freed lets it through.
TEST(ShmLink, AWriterWithNoFreeSlotWaitsUntilOneIsFreed) {
  Link l = Open(4096);
  std::vector<grpc::ByteBuffer> held;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(l.out->Write(Bytes(100, i), kAlways).ok());
    held.push_back(Take(*l.in));
  }
  int asked = 0;
  bool starving = false;
  absl::Status s = l.out->Write(Bytes(100, 8), [&] {
    starving = l.in->starving();
    return ++asked < 3;
  });
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_EQ(asked, 3);
  EXPECT_TRUE(starving);
  EXPECT_FALSE(l.in->starving());
  held.erase(held.begin() + 3);  // one slot free again
  std::thread late([&] { EXPECT_TRUE(l.out->Write(Bytes(100, 9), kAlways).ok()); });
  EXPECT_EQ(Contents(Take(*l.in)), Contents(Bytes(100, 9)));
  late.join();
  for (int i = 0; i < 7; ++i) EXPECT_EQ(Contents(held[i]), Contents(Bytes(100, i < 3 ? i : i + 1)));
}

// A frame larger than a slot is refused, and nothing is published.
TEST(ShmLink, AFrameLargerThanASlotIsRefused) {
  Link l = Open(4096);
  absl::Status s = l.out->Write(Bytes(4097, 0), kAlways);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  absl::StatusOr<std::optional<grpc::ByteBuffer>> none = l.in->Next(milliseconds(10));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
}

// The reader removes the file's name when it maps it; a writer whose reader never came
// removes it itself; a name that is no link is refused.
TEST(ShmLink, NamesAreRemovedAndWhatIsNoLinkIsRefused) {
  absl::StatusOr<std::unique_ptr<ShmWriter>> w = ShmWriter::Create(4096);
  ASSERT_TRUE(w.ok()) << w.status();
  const std::string name = (*w)->name();
  EXPECT_TRUE(Exists(name));
  EXPECT_FALSE((*w)->WaitAttached(milliseconds(10)));
  w->reset();
  EXPECT_FALSE(Exists(name));

  Link l = Open(4096);
  EXPECT_TRUE(l.out->WaitAttached(milliseconds(10)));
  EXPECT_FALSE(Exists(l.out->name()));
  EXPECT_TRUE(absl::IsUnavailable(ShmReader::Open(l.out->name()).status()));

  const std::string other = "/uopc-test-not-a-link-" + std::to_string(getpid());
  int fd = shm_open(other.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  const std::string junk(8192, 'x');
  ASSERT_EQ(write(fd, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  close(fd);
  absl::Status s = ShmReader::Open(other).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("not a uopc link"), std::string::npos) << s;
  EXPECT_TRUE(absl::IsInvalidArgument(ShmReader::Open("no-slash").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ShmReader::Open("/a/b").status()));
}

// Frames a mailbox keeps (taken later than they came) hold their slots; Materialize copies
// them out, which frees the slots for a starving writer, and their bytes stay.
TEST(ShmLink, FramesAMailboxKeepsAreCopiedOutForAStarvingWriter) {
  Link l = Open(64 << 10);
  Mailbox mailbox(0, 2);
  std::vector<float> payload(1000);
  for (int i = 0; i < 8; ++i) {
    wire::Frame h;
    h.set_from(1);
    h.set_op("all_reduce");
    h.set_dtype("f32");
    h.set_count(8000);
    h.set_step(0);
    h.set_offset(i * 1000);
    h.set_elements(1000);
    for (int k = 0; k < 1000; ++k) payload[k] = static_cast<float>(i * 1000 + k);
    ASSERT_TRUE(l.out->Write(EncodeFrame(h, payload.data(), payload.size() * 4), kAlways).ok());
    absl::StatusOr<InFrame> f = DecodeFrame(Take(*l.in));
    ASSERT_TRUE(f.ok()) << f.status();
    f->in_shared_memory = true;
    ASSERT_TRUE(mailbox.Deposit(*std::move(f)).ok());
  }
  int asked = 0;
  EXPECT_TRUE(absl::IsCancelled(l.out->Write(Bytes(10, 0), [&] { return ++asked < 2; })));
  mailbox.Materialize(1);
  asked = 0;  // at once: every slot is free
  EXPECT_TRUE(l.out->Write(Bytes(10, 0), [&] { return ++asked < 2; }).ok());
  for (int i = 7; i >= 0; --i) {  // in another order than they came
    absl::StatusOr<InFrame> f =
        mailbox.Take({1, 0, false, 0, 0, 0, static_cast<uint64_t>(i * 1000)},
                     {"all_reduce", "f32", 8000, 1000, 4000, "test"},
                     std::chrono::steady_clock::now() + std::chrono::seconds(1));
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_FALSE(f->in_shared_memory);
    std::vector<float> got(1000);
    f->CopyTo(got.data());
    EXPECT_EQ(got[0], i * 1000.0f);
    EXPECT_EQ(got[999], i * 1000.0f + 999);
  }
}

}  // namespace
}  // namespace uopc
