// The TCP link of ranks on different hosts: a writer and a reader on a loopback connection
// (here in one process, on two threads; the ranks' tests run them in two, and the
// multi-node tests across network namespaces).
#include "distributed/tcp_link.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/distributed/link_frames.h"

namespace uopc {
namespace {

using std::chrono::milliseconds;

const auto kAlways = [] { return true; };
constexpr size_t kMax = (4 << 20) + 4096;

struct Link {
  std::unique_ptr<TcpWriter> out;
  std::unique_ptr<TcpReader> in;
};

Link Open() {
  absl::StatusOr<std::unique_ptr<TcpWriter>> w = TcpWriter::Listen("127.0.0.1", kMax);
  EXPECT_TRUE(w.ok()) << w.status();
  absl::StatusOr<std::unique_ptr<TcpReader>> r = TcpReader::Connect((*w)->offer(), kMax);
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*w)->WaitAttached(milliseconds(5000)));
  return {*std::move(w), *std::move(r)};
}

TEST(TcpLink, FramesArriveInOrderWithTheirBytes) {
  Link l = Open();
  std::vector<size_t> sizes;
  for (int i = 0; i < 30; ++i) sizes.push_back(i % 3 == 0 ? kMax - 64 : 1 + i * 977);
  std::thread writer([&] {  // more than the socket buffers hold: the writer waits for room
    for (size_t i = 0; i < sizes.size(); ++i)
      EXPECT_TRUE(l.out->Write(Bytes(sizes[i], static_cast<int>(i)), kAlways).ok());
  });
  for (size_t i = 0; i < sizes.size(); ++i)
    EXPECT_EQ(Contents(Take(*l.in)), Contents(Bytes(sizes[i], static_cast<int>(i)))) << i;
  writer.join();
}

TEST(TcpLink, AFrameLargerThanTheReaderTakesIsRefusedAndNothingIsWritten) {
  Link l = Open();
  absl::Status s = l.out->Write(Bytes(kMax + 1, 0), kAlways);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  ASSERT_TRUE(l.out->Write(Bytes(5, 1), kAlways).ok());
  EXPECT_EQ(Contents(Take(*l.in)), Contents(Bytes(5, 1)));
}

// The writer takes only the connection that sends its nonce (the offer went over the job's
// authenticated stream); another is closed, and the wait goes on.
TEST(TcpLink, AConnectionWithoutTheNonceIsNotTheReader) {
  absl::StatusOr<std::unique_ptr<TcpWriter>> w = TcpWriter::Listen("127.0.0.1", kMax);
  ASSERT_TRUE(w.ok()) << w.status();
  const std::string offer = (*w)->offer();
  std::string wrong = offer;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  absl::StatusOr<std::unique_ptr<TcpReader>> stranger = TcpReader::Connect(wrong, kMax);
  ASSERT_TRUE(stranger.ok()) << stranger.status();  // (the kernel accepts; the writer refuses)
  EXPECT_FALSE((*w)->WaitAttached(milliseconds(300)));
  absl::StatusOr<std::unique_ptr<TcpReader>> r = TcpReader::Connect(offer, kMax);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE((*w)->WaitAttached(milliseconds(5000)));
  ASSERT_TRUE((*w)->Write(Bytes(10, 2), kAlways).ok());
  EXPECT_EQ(Contents(Take(**r)), Contents(Bytes(10, 2)));
  absl::StatusOr<std::optional<grpc::ByteBuffer>> none = (*stranger)->Next(milliseconds(500));
  EXPECT_FALSE(none.ok() && *none) << "the stranger got a frame";
}

// A connection that sends nothing, or part of a nonce, holds up no other: the writer reads
// every connection as its bytes come, and takes the reader's while the strangers stay silent.
TEST(TcpLink, ASilentConnectionHoldsUpNoOther) {
  absl::StatusOr<std::unique_ptr<TcpWriter>> w = TcpWriter::Listen("127.0.0.1", kMax);
  ASSERT_TRUE(w.ok()) << w.status();
  const std::string offer = (*w)->offer();
  const std::string host = offer.substr(0, offer.find(':'));
  const int port = std::stoi(offer.substr(offer.find(':') + 1));
  std::vector<int> strangers;
  for (const std::string& says : {std::string(), offer.substr(offer.find('/') + 1, 10)}) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(send(fd, says.data(), says.size(), 0), static_cast<ssize_t>(says.size()));
    strangers.push_back(fd);
  }
  absl::StatusOr<std::unique_ptr<TcpReader>> r = TcpReader::Connect(offer, kMax);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE((*w)->WaitAttached(milliseconds(3000)));  // (the strangers are still open)
  ASSERT_TRUE((*w)->Write(Bytes(10, 3), kAlways).ok());
  EXPECT_EQ(Contents(Take(**r)), Contents(Bytes(10, 3)));
  for (int fd : strangers) {  // closed by the writer once it had its reader
    char c;
    EXPECT_EQ(recv(fd, &c, 1, 0), 0);
    close(fd);
  }
}

TEST(TcpLink, BadOffersAreRefused) {
  for (const char* offer : {"", "127.0.0.1", "127.0.0.1:80", "127.0.0.1:0/uopc-x",
                            "host:80/uopc-0123456789abcdef0123456789abcdef",
                            "127.0.0.1:99999/uopc-0123456789abcdef0123456789abcdef"}) {
    absl::StatusOr<std::unique_ptr<TcpReader>> r = TcpReader::Connect(offer, kMax);
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << offer << ": " << r.status();
  }
}

// What has come is read before a wake ends the reader (a writer that exits right after its
// last frame ends its stream too, which wakes the reader); then Next says nothing for good.
TEST(TcpLink, AWakeEndsTheReaderAfterWhatHasCome) {
  Link l = Open();
  ASSERT_TRUE(l.out->Write(Bytes(300000, 3), kAlways).ok());
  std::this_thread::sleep_for(milliseconds(100));
  l.in->Wake();
  EXPECT_EQ(Contents(Take(*l.in)), Contents(Bytes(300000, 3)));
  absl::StatusOr<std::optional<grpc::ByteBuffer>> none = l.in->Next(milliseconds(5000));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(*none);
}

TEST(TcpLink, TheWritersEndIsAnErrorAndALengthNoWriterWritesIsToo) {
  Link l = Open();
  l.out.reset();
  absl::StatusOr<std::optional<grpc::ByteBuffer>> end = l.in->Next(milliseconds(5000));
  EXPECT_TRUE(absl::IsUnavailable(end.status())) << end.status();

  // a raw connection that sends the nonce and then a length past the limit
  absl::StatusOr<std::unique_ptr<TcpWriter>> w = TcpWriter::Listen("127.0.0.1", kMax);
  ASSERT_TRUE(w.ok());
  const std::string offer = (*w)->offer();
  std::thread fake([&] { EXPECT_TRUE((*w)->WaitAttached(milliseconds(5000))); });
  absl::StatusOr<std::unique_ptr<TcpReader>> r = TcpReader::Connect(offer, 1000);
  ASSERT_TRUE(r.ok());
  fake.join();
  ASSERT_TRUE((*w)->Write(Bytes(1001, 4), kAlways).ok());  // (the writer's limit is larger)
  absl::StatusOr<std::optional<grpc::ByteBuffer>> big = (*r)->Next(milliseconds(5000));
  EXPECT_TRUE(absl::IsInvalidArgument(big.status())) << big.status();
}

TEST(TcpLink, AWriterToldToStopWhileTheSocketIsFullStops) {
  Link l = Open();
  int asked = 0;
  absl::Status s;
  for (int i = 0; i < 200 && s.ok(); ++i)  // nobody reads: the socket fills
    s = l.out->Write(Bytes(kMax - 64, i), [&] { return ++asked < 3; });
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
}

}  // namespace
}  // namespace uopc
