#include "distributed/frame_codec.h"

#include <cstring>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "absl/strings/str_cat.h"

namespace uopc {
namespace {

using google::protobuf::internal::WireFormatLite;

constexpr int kPayloadField = wire::Frame::kPayloadFieldNumber;
// Headers are a few dozen bytes; anything longer before the payload is not a frame.
constexpr size_t kMaxHeader = 512;

std::vector<grpc::Slice> Slices(const grpc::ByteBuffer& b) {
  std::vector<grpc::Slice> s;
  (void)b.Dump(&s);  // references, not copies
  return s;
}

}  // namespace

grpc::ByteBuffer EncodeFrame(const wire::Frame& header, std::vector<grpc::Slice> payload) {
  wire::Frame h = header;
  h.clear_payload();
  std::string head = h.SerializeAsString();
  size_t size = 0;
  for (const grpc::Slice& s : payload) size += s.size();
  if (size > 0) {
    uint8_t prefix[16];
    uint8_t* end = WireFormatLite::WriteTagToArray(
        kPayloadField, WireFormatLite::WIRETYPE_LENGTH_DELIMITED, prefix);
    end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(size, end);
    head.append(reinterpret_cast<char*>(prefix), end - prefix);
  }
  payload.insert(payload.begin(), grpc::Slice(head));
  return grpc::ByteBuffer(payload.data(), size > 0 ? payload.size() : 1);
}

grpc::ByteBuffer EncodeFrame(const wire::Frame& header, const void* payload, size_t size) {
  return EncodeFrame(header, std::vector<grpc::Slice>{grpc::Slice(payload, size)});
}

absl::StatusOr<InFrame> DecodeFrame(grpc::ByteBuffer bytes) {
  // the first bytes, contiguous
  const size_t total = bytes.Length();
  std::string first;
  for (const grpc::Slice& s : Slices(bytes)) {
    first.append(reinterpret_cast<const char*>(s.begin()),
                 std::min(s.size(), kMaxHeader - first.size()));
    if (first.size() == kMaxHeader) break;
  }
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(first.data()),
                                            static_cast<int>(first.size()));
  InFrame f;
  size_t header_end = first.size();
  for (uint32_t tag; (tag = in.ReadTag()) != 0;) {
    if (WireFormatLite::GetTagFieldNumber(tag) == kPayloadField &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      header_end =
          in.CurrentPosition() - google::protobuf::io::CodedOutputStream::VarintSize32(tag);
      uint64_t size;
      if (!in.ReadVarint64(&size)) break;
      f.payload_at = in.CurrentPosition();
      f.payload_size = size;
      if (f.payload_at + size != total)
        return absl::InvalidArgumentError(
            absl::StrCat("a frame whose payload (", size, " bytes at ", f.payload_at,
                         ") is not its last ", total - f.payload_at, " bytes"));
      break;
    }
    if (!WireFormatLite::SkipField(&in, tag)) break;
  }
  if (f.payload_at == 0 && total > kMaxHeader)
    return absl::InvalidArgumentError(absl::StrCat(
        "a frame of ", total, " bytes without a payload field in its first ", kMaxHeader));
  if (f.payload_at == 0) f.payload_at = header_end = total;
  if (!f.header.ParseFromArray(first.data(), static_cast<int>(header_end)))
    return absl::InvalidArgumentError(
        absl::StrCat("an undecodable frame header (", header_end, " bytes)"));
  f.bytes = std::move(bytes);
  return f;
}

void InFrame::ForEachRun(int width,
                         const std::function<void(const char*, int64_t, int64_t)>& run) const {
  char bounce[16];
  size_t in_bounce = 0;  // bytes of a split element gathered so far
  int64_t element = 0;
  size_t skip = payload_at;
  for (const grpc::Slice& s : Slices(bytes)) {
    const char* p = reinterpret_cast<const char*>(s.begin());
    size_t n = s.size();
    if (skip >= n) {
      skip -= n;
      continue;
    }
    p += skip, n -= skip, skip = 0;
    if (in_bounce) {  // finish the split element
      size_t take = std::min(n, width - in_bounce);
      std::memcpy(bounce + in_bounce, p, take);
      p += take, n -= take, in_bounce += take;
      if (in_bounce < static_cast<size_t>(width)) continue;
      run(bounce, element++, 1);
      in_bounce = 0;
    }
    const int64_t whole = static_cast<int64_t>(n / width);
    if (whole) run(p, element, whole);
    element += whole;
    in_bounce = n - whole * width;
    std::memcpy(bounce, p + whole * width, in_bounce);
  }
}

std::vector<grpc::Slice> InFrame::PayloadSlices() const {
  std::vector<grpc::Slice> out;
  size_t skip = payload_at;
  for (grpc::Slice& s : Slices(bytes)) {
    if (skip >= s.size()) {
      skip -= s.size();
      continue;
    }
    out.push_back(skip ? s.sub(skip, s.size()) : std::move(s));
    skip = 0;
  }
  return out;
}

void InFrame::CopyTo(void* dst) const {
  char* out = static_cast<char*>(dst);
  ForEachRun(1, [&](const char* p, int64_t first, int64_t n) { std::memcpy(out + first, p, n); });
}

}  // namespace uopc
