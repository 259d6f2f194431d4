// The wire's guards, on a real gRPC server on loopback: the job token on every service,
// and every way a peer's stream of segments can be wrong.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "distributed/mailbox.h"
#include "distributed/peer_service.h"
#include "rpc/grpc_call.h"
#include "distributed/store.h"

namespace uopc {
namespace {

using std::chrono::milliseconds;

/// A server on a loopback port (0: a free one) with a store and rank 0's peer service of a
/// 2-rank job's `restart`th start.
struct Server {
  explicit Server(const std::string& token, int restart = 0, int at_port = 0)
      : store(token, restart), mailbox(0, 2), peer(token, &mailbox) {
    grpc::ServerBuilder b;
    ConfigureServer(b);
    b.AddListeningPort("127.0.0.1:" + std::to_string(at_port), grpc::InsecureServerCredentials(),
                       &port);
    b.RegisterService(&store);
    b.RegisterService(&peer);
    server = b.BuildAndStart();
  }
  ~Server() { server->Shutdown(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }

  StoreService store;
  Mailbox mailbox;
  PeerService peer;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

wire::Frame Segment(uint64_t stream_seq, uint64_t elements, size_t bytes, uint64_t offset = 0) {
  wire::Frame f;
  f.set_from(1);
  f.set_stream_seq(stream_seq);
  f.set_collective(0);
  f.set_op("all_reduce");
  f.set_dtype("f32");
  f.set_count(8);
  f.set_step(0);
  f.set_offset(offset);
  f.set_elements(elements);
  f.set_payload(std::string(bytes, '\0'));
  return f;
}

/// Pushes `frames` on one stream with `token`; the stream's final status.
grpc::Status Push(const Server& s, const std::string& token,
                  const std::vector<wire::Frame>& frames) {
  auto stub = wire::Peer::NewStub(MakeChannel(s.address()));
  auto ctx = CallContext(token, milliseconds(5000));
  wire::Empty reply;
  auto w = stub->Push(ctx.get(), &reply);
  for (const wire::Frame& f : frames)
    if (!w->Write(f)) break;
  w->WritesDone();
  return w->Finish();
}

Expect FourF32() { return Expect{"all_reduce", "f32", 8, 4, 16, "step 1 of 2"}; }
SegmentKey At(uint64_t offset = 0) { return {1, 0, false, 0, 0, 0, offset}; }
auto Soon() { return std::chrono::steady_clock::now() + milliseconds(300); }

TEST(Token, AStoreCallWithoutTheJobsTokenIsRefusedAndChangesNothing) {
  Server s("right");
  EXPECT_EQ(StoreClient(s.address(), "wrong", milliseconds(2000)).Set("k", "evil").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(StoreClient(s.address(), "", milliseconds(2000)).Add("n", 5).status().code(),
            absl::StatusCode::kPermissionDenied);
  StoreClient ok(s.address(), "right", milliseconds(300));
  EXPECT_EQ(ok.Get("k").status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(*ok.Add("n", 1), 1);
}

TEST(Token, APeerCallWithAnotherJobsTokenIsRefusedAndChangesNothing) {
  Server s("right");
  grpc::Status st = Push(s, "wrong", {Segment(0, 4, 16)});
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("another uopc job"), std::string::npos) << st.error_message();
  auto stub = wire::Peer::NewStub(MakeChannel(s.address()));
  auto ctx = CallContext("wrong", milliseconds(2000));
  wire::AbortRequest abort;
  abort.set_from(1);
  wire::Empty reply;
  EXPECT_EQ(stub->Abort(ctx.get(), abort, &reply).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.mailbox.aborted(), "");
  EXPECT_EQ(s.mailbox.Take(At(), FourF32(), Soon()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(Store, GetWaitsForTheKeyAndAddCounts) {
  Server s("t");
  StoreClient c(s.address(), "t", milliseconds(5000));
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(100));
    ASSERT_TRUE(StoreClient(s.address(), "t", milliseconds(5000)).Set("addr/1", "h:1").ok());
  });
  absl::StatusOr<std::string> v = c.Get("addr/1");
  later.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "h:1");
  EXPECT_EQ(*c.Add("n", 2), 2);
  EXPECT_EQ(*c.Add("n", 3), 5);
  EXPECT_EQ(c.Add("addr/1", 1).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Store, ABarrierOpensWhenAllHaveArrived) {
  Server s("t");
  std::vector<std::thread> first;
  std::atomic<int> passed{0};
  for (int i = 0; i < 2; ++i)
    first.emplace_back([&] {
      if (StoreClient(s.address(), "t", milliseconds(5000)).Barrier("start", 3).ok()) ++passed;
    });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(passed.load(), 0);  // two of three: still closed
  EXPECT_TRUE(StoreClient(s.address(), "t", milliseconds(5000)).Barrier("start", 3).ok());
  for (std::thread& t : first) t.join();
  EXPECT_EQ(passed.load(), 2);
  EXPECT_EQ(StoreClient(s.address(), "t", milliseconds(200)).Barrier("other", 2).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(Store, ARankOfAnotherStartIsRefusedNamingBothStarts) {
  Server s("t", /*restart=*/1);
  absl::Status st = StoreClient(s.address(), "t", milliseconds(300), 0).Set("addr/1", "old");
  EXPECT_EQ(st.code(), absl::StatusCode::kAborted) << st;
  EXPECT_NE(st.message().find("start 1, the caller is of start 0"), std::string::npos) << st;
  EXPECT_EQ(StoreClient(s.address(), "t", milliseconds(300), 1).Get("addr/1").status().code(),
            absl::StatusCode::kDeadlineExceeded);  // the refused set changed nothing
}

// A restarted rank 1 that reaches rank 0's address while the earlier start's rank 0 still
// serves there waits for the new rank 0 instead of joining the old one.
TEST(Store, ARestartedRankWaitsThroughAnEarlierStartsStore) {
  auto old = std::make_unique<Server>("t", /*restart=*/0);
  const int port = old->port;
  const std::string address = old->address();
  absl::Status set;
  std::thread rank1(
      [&] { set = StoreClient(address, "t", milliseconds(10000), 1).Set("addr/1", "new"); });
  std::this_thread::sleep_for(milliseconds(300));
  old.reset();  // the earlier start's rank 0 exits; this start's comes up at the same port
  Server now("t", /*restart=*/1, port);
  ASSERT_EQ(now.port, port);
  rank1.join();
  EXPECT_TRUE(set.ok()) << set;
  absl::StatusOr<std::string> v = StoreClient(address, "t", milliseconds(2000), 1).Get("addr/1");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "new");
}

// A call that an exiting rank 0's store cancels as it shuts down (a restarted rank 1's
// set or get, in flight when the earlier start's rank 0 exits) waits for the next store at
// that address, as a call the earlier start's store refuses does.
TEST(Store, ACallCancelledByAStoreShuttingDownWaitsForTheNextStore) {
  auto old = std::make_unique<Server>("t", /*restart=*/1);
  const int port = old->port;
  const std::string address = old->address();
  absl::StatusOr<std::string> got;
  std::thread rank1([&] { got = StoreClient(address, "t", milliseconds(10000), 1).Get("addr/0"); });
  std::this_thread::sleep_for(milliseconds(300));  // (the get waits at the old store)
  old->server->Shutdown(std::chrono::system_clock::now());  // (cancels it, as an exit does)
  old.reset();
  Server now("t", /*restart=*/1, port);
  ASSERT_EQ(now.port, port);
  ASSERT_TRUE(StoreClient(address, "t", milliseconds(2000), 1).Set("addr/0", "a").ok());
  rank1.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "a");
}

TEST(Segments, AGoodSegmentArrivesWhole) {
  Server s("t");
  wire::Frame f = Segment(0, 4, 16);
  f.set_payload(std::string("0123456789abcdef"));
  EXPECT_TRUE(Push(s, "t", {f}).ok());
  absl::StatusOr<InFrame> got = s.mailbox.Take(At(), FourF32(), Soon());
  ASSERT_TRUE(got.ok()) << got.status();
  std::string payload(16, ' ');
  got->CopyTo(payload.data());
  EXPECT_EQ(payload, "0123456789abcdef");
}

TEST(Segments, AMalformedSegmentIsRefused) {
  Server s("t");
  grpc::Status st = Push(s, "t", {Segment(0, 3, 7)});
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  absl::Status waited = s.mailbox.Take(At(), FourF32(), Soon()).status();
  EXPECT_NE(waited.message().find("rank 1 sent a malformed segment: 7 bytes for 3 elements"),
            std::string::npos)
      << waited;
}

TEST(Segments, ADuplicateSegmentIsRefused) {
  Server s("t");
  grpc::Status st = Push(s, "t", {Segment(0, 4, 16, 4), Segment(1, 4, 16, 4)});
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("duplicate segment"), std::string::npos) << st.error_message();
  EXPECT_NE(s.mailbox.Take(At(), FourF32(), Soon()).status().message().find("duplicate segment"),
            std::string::npos);
}

TEST(Segments, OutOfOrderOrRepeatedFramesAreRefused) {
  for (uint64_t second : {2, 0}) {
    Server s("t");
    grpc::Status st = Push(s, "t", {Segment(0, 4, 16, 4), Segment(second, 4, 16, 0)});
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    absl::Status waited = s.mailbox.Take(At(), FourF32(), Soon()).status();
    EXPECT_NE(waited.message().find(second ? "(out of order or lost)" : "(a repeat)"),
              std::string::npos)
        << waited;
  }
}

TEST(Segments, AWronglySizedSegmentIsRefusedWhenTaken) {
  Server s("t");
  EXPECT_TRUE(Push(s, "t", {Segment(0, 2, 8)}).ok());
  absl::Status st = s.mailbox.Take(At(), FourF32(), Soon()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("rank 1 sent a wrongly sized segment in step 1 of 2: 2 elements in 8 "
                              "bytes; expected 4 in 16"),
            std::string::npos)
      << st;
}

TEST(Segments, AnotherCollectivesSegmentIsAMismatch) {
  Server s("t");
  wire::Frame f = Segment(0, 4, 16);
  f.set_op("all_gather");
  EXPECT_TRUE(Push(s, "t", {f}).ok());
  absl::Status st = s.mailbox.Take(At(), FourF32(), Soon()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(
      st.message().find(
          "mismatched collectives: rank 1 called all_gather of 8 x f32 as collective #0 while this "
          "rank called all_reduce of 8 x f32"),
      std::string::npos)
      << st;
}

TEST(Segments, ADroppedStreamFailsWaitsOnItsSenderAndAByeDoesNot) {
  Server s("t");
  EXPECT_TRUE(Push(s, "t", {Segment(0, 4, 16, 4)}).ok());  // ends without a bye
  absl::Status st = s.mailbox.Take(At(), FourF32(), Soon()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("rank 1's connection dropped"), std::string::npos) << st;

  Server clean("t");
  wire::Frame bye;
  bye.set_from(1);
  bye.set_stream_seq(1);
  bye.set_op("bye");
  EXPECT_TRUE(Push(clean, "t", {Segment(0, 4, 16), bye}).ok());
  EXPECT_TRUE(clean.mailbox.Take(At(), FourF32(), Soon()).ok());
}

TEST(Segments, AnAbortFailsEveryWait) {
  Server s("t");
  auto stub = wire::Peer::NewStub(MakeChannel(s.address()));
  auto ctx = CallContext("t", milliseconds(2000));
  wire::AbortRequest abort;
  abort.set_from(1);
  abort.set_reason("all_reduce #3 failed");
  wire::Empty reply;
  ASSERT_TRUE(stub->Abort(ctx.get(), abort, &reply).ok());
  absl::Status st = s.mailbox.Take(At(), FourF32(), Soon()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(st.message(), "rank 1 aborted: all_reduce #3 failed");
}

}  // namespace
}  // namespace uopc
