// ToAbsl and ToGrpc: a status crosses the gRPC edge with its code and its words, and a
// failure of gRPC's own that has no words is named by its code (a rank once stopped with
// "store at 127.0.0.1:39975: set addr/2: " and nothing after it).
#include "rpc/grpc_call.h"

#include <gtest/gtest.h>

namespace uopc {
namespace {

TEST(GrpcCall, AStatusKeepsItsCodeAndItsWordsBothWays) {
  const absl::Status s = ToAbsl(grpc::Status(grpc::StatusCode::ABORTED, "another start"));
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(s.message(), "another start");
  const grpc::Status g = ToGrpc(s);
  EXPECT_EQ(g.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(g.error_message(), "another start");
  EXPECT_TRUE(ToAbsl(grpc::Status::OK).ok());
}

TEST(GrpcCall, AFailureWithNoWordsIsNamedByItsCode) {
  const absl::Status s = ToAbsl(grpc::Status(grpc::StatusCode::UNAVAILABLE, ""));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "UNAVAILABLE from gRPC");
}

}  // namespace
}  // namespace uopc
