#include "distributed/peer_address.h"

#include <chrono>
#include <memory>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "distributed/wire.grpc.pb.h"

namespace uopc {
namespace {

TEST(PeerAddress, EncodesForTheStoreAndDecodesBack) {
  for (const PeerAddress& a :
       {PeerAddress{"10.1.2.3:41234", "boot/1:2", "uopc-ab"}, PeerAddress{"127.0.0.1:5", "", ""}}) {
    absl::StatusOr<PeerAddress> b = PeerAddress::Decode(a.Encode());
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->tcp, a.tcp);
    EXPECT_EQ(b->host, a.host);
    EXPECT_EQ(b->unix_name, a.unix_name);
  }
  for (const char* bad : {"", "10.1.2.3:41234", "a b c d", " - -"}) {
    absl::Status s = PeerAddress::Decode(bad).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad;
    EXPECT_NE(s.message().find("is not a peer address"), std::string::npos) << s;
  }
}

TEST(PeerAddress, ThisHostIsKnownAndStableAndNamesAreFresh) {
  EXPECT_FALSE(ThisHost().empty());
  EXPECT_EQ(ThisHost(), ThisHost());
  std::set<std::string> names;
  for (int i = 0; i < 100; ++i) names.insert(NewUnixName());
  EXPECT_EQ(names.size(), 100u);
  EXPECT_EQ(names.begin()->rfind("uopc-", 0), 0u);
}

// A real gRPC server on an abstract unix socket and on a TCP port, whose Peer service
// implements nothing.
class ChannelToTest : public testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.AddListeningPort(UnixAddress(name_), grpc::InsecureServerCredentials());
    b.RegisterService(&service_);
    server_ = b.BuildAndStart();
    ASSERT_TRUE(server_ && port_ > 0);
  }
  void TearDown() override { server_->Shutdown(); }
  /// The server answers a call on `c` (that it does not implement it).
  static bool Connects(const std::shared_ptr<grpc::Channel>& c) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    wire::Empty reply;
    return c && wire::Peer::NewStub(c)->Abort(&ctx, wire::AbortRequest(), &reply).error_code() ==
                    grpc::StatusCode::UNIMPLEMENTED;
  }
  PeerAddress Peer() { return {"127.0.0.1:" + std::to_string(port_), ThisHost(), name_}; }

  std::string name_ = NewUnixName();
  int port_ = 0;
  wire::Peer::Service service_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(ChannelToTest, APeerOnThisHostIsReachedThroughItsUnixSocket) {
  std::string used;
  EXPECT_TRUE(Connects(ChannelTo(Peer(), ThisHost(), &used)));
  EXPECT_EQ(used, "unix-abstract:" + name_);
}

TEST_F(ChannelToTest, OtherHostsAndUnixSocketsThatDoNotConnectUseTcp) {
  std::string used;
  PeerAddress other = Peer();
  other.host = "another boot/1:2";
  EXPECT_TRUE(Connects(ChannelTo(other, ThisHost(), &used)));
  EXPECT_EQ(used, other.tcp);
  PeerAddress gone = Peer();
  gone.unix_name = NewUnixName();  // nobody listens there
  EXPECT_TRUE(Connects(ChannelTo(gone, ThisHost(), &used)));
  EXPECT_EQ(used, gone.tcp);
  EXPECT_TRUE(Connects(ChannelTo(Peer(), "", &used)));  // this rank cannot tell its host
  EXPECT_EQ(used, Peer().tcp);
}

}  // namespace
}  // namespace uopc
