// What the link tests (shm_link_test, tcp_link_test) share: frames of known bytes, a
// frame's bytes as one string, and the next frame a reader gives.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/support/byte_buffer.h>
#include <gtest/gtest.h>

#include "absl/status/statusor.h"

namespace uopc {

/// `n` bytes that `seed` tells apart, in slices of 100,000 bytes (as an encoded frame is in
/// pieces).
inline grpc::ByteBuffer Bytes(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7) % 251);
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < n; at += 100000) slices.emplace_back(s.substr(at, 100000));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

inline std::string Contents(const grpc::ByteBuffer& b) {
  grpc::Slice whole;
  EXPECT_TRUE(b.DumpToSingleSlice(&whole).ok());
  return std::string(reinterpret_cast<const char*>(whole.begin()), whole.size());
}

/// The next frame of `in` (a ShmReader or a TcpReader), waiting up to a few seconds.
template <typename Reader>
grpc::ByteBuffer Take(Reader& in) {
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<std::optional<grpc::ByteBuffer>> b = in.Next(std::chrono::milliseconds(100));
    EXPECT_TRUE(b.ok()) << b.status();
    if (b.ok() && *b) return **b;
  }
  ADD_FAILURE() << "no frame came";
  return {};
}

}  // namespace uopc
