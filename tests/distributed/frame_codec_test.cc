#include "distributed/frame_codec.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace uopc {
namespace {

wire::Frame Header() {
  wire::Frame h;
  h.set_from(2);
  h.set_stream_seq(9);
  h.set_op("all_reduce");
  h.set_dtype("f32");
  h.set_count(1000);
  h.set_offset(40);
  h.set_elements(5);
  h.set_tag(3);
  return h;
}

/// `b`'s bytes re-cut into slices of the given sizes (as the transport might hand them over).
grpc::ByteBuffer Recut(const grpc::ByteBuffer& b, std::vector<size_t> sizes) {
  grpc::Slice whole;
  EXPECT_TRUE(b.DumpToSingleSlice(&whole).ok());
  std::vector<grpc::Slice> parts;
  size_t at = 0;
  for (size_t n : sizes) {
    parts.push_back(grpc::Slice(whole.begin() + at, std::min(n, whole.size() - at)));
    at += parts.back().size();
  }
  if (at < whole.size()) parts.push_back(grpc::Slice(whole.begin() + at, whole.size() - at));
  return grpc::ByteBuffer(parts.data(), parts.size());
}

TEST(FrameCodec, RoundTripsHeaderAndPayloadReadInRunsOfWholeElements) {
  const float payload[5] = {1.5f, -2, 3.25f, 4, 5};
  grpc::ByteBuffer b = EncodeFrame(Header(), payload, sizeof payload);
  for (std::vector<size_t> cut : {std::vector<size_t>{}, {3}, {50, 7}, {51, 1, 1, 1, 9}}) {
    absl::StatusOr<InFrame> f = DecodeFrame(Recut(b, cut));
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(f->header.op(), "all_reduce");
    EXPECT_EQ(f->header.tag(), 3);
    EXPECT_EQ(f->header.elements(), 5u);
    EXPECT_EQ(f->payload_size, sizeof payload);
    float got[5] = {};
    int64_t seen = 0;
    f->ForEachRun(4, [&](const char* p, int64_t first, int64_t n) {
      EXPECT_EQ(first, seen);
      std::memcpy(got + first, p, n * 4);
      seen += n;
    });
    EXPECT_EQ(seen, 5);
    EXPECT_EQ(std::memcmp(got, payload, sizeof payload), 0);
    // forwarded as it came: the same frame again, without a copy of the payload
    absl::StatusOr<InFrame> again = DecodeFrame(EncodeFrame(f->header, f->PayloadSlices()));
    ASSERT_TRUE(again.ok()) << again.status();
    float back[5] = {};
    again->CopyTo(back);
    EXPECT_EQ(std::memcmp(back, payload, sizeof payload), 0);
  }
}

TEST(FrameCodec, AFrameWithoutPayloadIsItsHeader) {
  absl::StatusOr<InFrame> f = DecodeFrame(EncodeFrame(Header(), nullptr, 0));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->payload_size, 0u);
  EXPECT_EQ(f->header.count(), 1000u);
}

TEST(FrameCodec, AStandardProtobufEncodingDecodes) {
  wire::Frame h = Header();
  h.set_payload(std::string(20, 'x'));
  std::string s = h.SerializeAsString();
  grpc::Slice slice(s);
  absl::StatusOr<InFrame> f = DecodeFrame(grpc::ByteBuffer(&slice, 1));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->payload_size, 20u);
  EXPECT_EQ(f->header.payload(), "");
}

TEST(FrameCodec, GarbageAndAPayloadThatIsNotLastAreRefused) {
  std::string junk(2000, '\xff');
  grpc::Slice a(junk);
  EXPECT_FALSE(DecodeFrame(grpc::ByteBuffer(&a, 1)).ok());
  // payload, then another field after it
  wire::Frame h;
  h.set_payload("abcd");
  std::string s = h.SerializeAsString();
  wire::Frame tail;
  tail.set_from(1);
  s += tail.SerializeAsString();
  grpc::Slice b(s);
  absl::Status st = DecodeFrame(grpc::ByteBuffer(&b, 1)).status();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("is not its last"), std::string::npos) << st;
}

}  // namespace
}  // namespace uopc
