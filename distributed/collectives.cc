// The algorithms of ProcessGroup. The ring: rank r sends to r+1 and receives from r-1.
// A tensor of `total` elements is cut into p chunks, chunk c = [c*total/p, (c+1)*total/p),
// and every chunk into segments (SegmentElements). Reduce-scatter leaves the sum of chunk r
// on rank r after p-1 steps; all-gather then passes the finished chunks around in p-1
// more. Each received segment is reduced and at once queued for the next step, so the
// sender thread has it on the wire while the next one is reduced. Each chunk is summed in
// one fixed order (starting at its owner's successor), and the owner's bits are what every
// rank gets: results are the same on every rank and in every run. f16 and bf16 travel as
// themselves, half the bytes of f32: each rank sums in f32 and rounds its partial sum to
// the half as it passes it on (as NCCL does), so p = 2 rounds once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "core/float16.h"
#include "core/status_macros.h"
#include "distributed/process_group.h"

namespace uopc {
namespace {

// A chunk travels in at least four segments, so that sending one overlaps reducing the
// next, of 256 KiB to 4 MiB: larger frames cost less per byte (4 MiB against 1 MiB: about
// 15% more busbw at 64 MiB, measured).
constexpr int64_t kMinSegmentBytes = 256 << 10, kMaxSegmentBytes = 4 << 20;
// An all-reduce of N bytes goes direct, (p-1)N bytes per rank in one step, rather than
// around the ring, 2(p-1)N/p in 2(p-1) steps, while pN is at most this: below it the
// steps cost more than the bytes (p=2, 256 KiB: 0.49 -> 0.67 GB/s busbw; 4 MiB direct
// halves it; p=4, 256 KiB: even).
constexpr int64_t kDirectBytes = 512 << 10;

int Mod(int64_t a, int p) { return static_cast<int>(((a % p) + p) % p); }

struct Span {
  int64_t offset, n;
};

/// Chunk c of `total` elements split p ways, in segments of at most `per` elements; an
/// empty chunk is one empty segment, so that every step exchanges at least one frame
/// (which is how a peer that called something else is noticed).
std::vector<Span> Chunk(int64_t total, int p, int c, int64_t per) {
  const int64_t begin = total / p * c + total % p * c / p,
                end = total / p * (c + 1) + total % p * (c + 1) / p;
  std::vector<Span> out;
  for (int64_t o = begin; o < end; o += per) out.push_back({o, std::min(per, end - o)});
  if (out.empty()) out.push_back({begin, 0});
  return out;
}

/// Elements per segment for chunks of `total` elements of width `w` split `p` ways.
int64_t SegmentElements(int64_t total, int p, int64_t w) {
  const int64_t bytes = std::clamp(total / p * w / 4, kMinSegmentBytes, kMaxSegmentBytes);
  return bytes / w;
}

bool Reducible(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kI32;
}

/// f16 and bf16 accumulate in f32.
DType WorkDType(DType t) { return t == DType::kF16 || t == DType::kBF16 ? DType::kF32 : t; }

/// dst[i] = f(dst[i], src[i]); `src` may be unaligned (where the transport's buffer has it).
template <typename T, typename F>
void Each(void* dst, const void* src, int64_t n, F f) {
  T* __restrict d = static_cast<T*>(dst);
  const char* __restrict s = static_cast<const char*>(src);
  for (int64_t i = 0; i < n; ++i) {
    T b;
    std::memcpy(&b, s + i * sizeof(T), sizeof(T));
    d[i] = f(d[i], b);
  }
}

/// dst = dst (op) src, over n elements of `t` (f32 or i32). Max and min propagate NaN;
/// i32 sums wrap around.
void Reduce(DType t, ReduceOp op, void* dst, const void* src, int64_t n) {
  if (t == DType::kF32) {
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: return Each<float>(dst, src, n, [](float a, float b) { return a + b; });
      case ReduceOp::kMax:
        return Each<float>(dst, src, n,
                           [](float a, float b) { return b > a || std::isnan(b) ? b : a; });
      case ReduceOp::kMin:
        return Each<float>(dst, src, n,
                           [](float a, float b) { return b < a || std::isnan(b) ? b : a; });
    }
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return Each<int32_t>(dst, src, n, [](int32_t a, int32_t b) {
        return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
      });
    case ReduceOp::kMax:
      return Each<int32_t>(dst, src, n, [](int32_t a, int32_t b) { return std::max(a, b); });
    case ReduceOp::kMin:
      return Each<int32_t>(dst, src, n, [](int32_t a, int32_t b) { return std::min(a, b); });
  }
}

/// The average from the sum, on the owner of a chunk (i32: rounded toward zero).
void Divide(DType t, void* data, int64_t n, int p) {
  if (t == DType::kF32)
    for (float* d = static_cast<float*>(data); n--; ++d) *d /= static_cast<float>(p);
  else
    for (int32_t* d = static_cast<int32_t*>(data); n--; ++d) *d /= p;
}

/// n elements of f16/bf16 `t` at `in` to f32 at `out`, and back.
void ToF32(DType t, const void* in, float* out, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(in);
  for (int64_t i = 0; i < n; ++i) out[i] = t == DType::kF16 ? F16ToF32(h[i]) : BF16ToF32(h[i]);
}
void FromF32(DType t, const float* in, void* out, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(out);
  for (int64_t i = 0; i < n; ++i) h[i] = t == DType::kF16 ? F32ToF16(in[i]) : F32ToBF16(in[i]);
}

/// dst (f32) = dst (op) src, where `src` holds n elements of the wire's dtype `wire` (maybe
/// unaligned): a half is widened to f32 first, so sums of halves accumulate in f32.
void ReduceFrom(DType wire, DType t, ReduceOp op, void* dst, const char* src, int64_t n) {
  if (wire == t) return Reduce(t, op, dst, src, n);
  constexpr int64_t kBlock = 1024;
  uint16_t half[kBlock];
  float wide[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    std::memcpy(half, src + i * 2, m * 2);
    ToF32(wire, half, wide, m);
    Reduce(t, op, static_cast<float*>(dst) + i, wide, m);
  }
}

}  // namespace

/// One collective on this rank: its header, and segments to send and to take.
struct ProcessGroup::Call {
  ProcessGroup& g;
  uint64_t seq;
  std::string op;  // the header's op: every rank must call the same
  DType dtype;     // the caller's
  int64_t count;   // the caller's
  uint32_t steps;  // for messages
  bool p2p = false;
  int tag = 0;

  int p() const { return g.world_size(); }
  int r() const { return g.rank(); }

  wire::Frame Header(uint32_t step, Span s) const {
    wire::Frame f;
    f.set_collective(seq);
    f.set_op(op);
    f.set_dtype(std::string(DTypeName(dtype)));
    f.set_count(count);
    f.set_step(step);
    f.set_offset(s.offset);
    f.set_elements(s.n);
    f.set_tag(tag);
    f.set_group(g.id_);
    return f;
  }

  /// Sends span `s` of `base` from where it lies (it must not change before the collective
  /// ends, or before a frame that depends on it comes back), or a copy.
  void Send(int to, uint32_t step, const void* base, DType wire, Span s, bool copy = false) {
    const int64_t w = DTypeSize(wire);
    g.job_->transport->Send(g.ranks_[to], Header(step, s),
                            static_cast<const char*>(base) + s.offset * w, s.n * w,
                       /*borrow=*/!copy);
  }

  absl::StatusOr<InFrame> Take(int from, uint32_t step, DType wire, Span s) {
    Expect e{op,
             std::string(DTypeName(dtype)),
             static_cast<uint64_t>(count),
             static_cast<uint64_t>(s.n),
             static_cast<uint64_t>(s.n * DTypeSize(wire)),
             absl::StrCat("step ", step + 1, " of ", steps)};
    absl::StatusOr<InFrame> f = g.job_->mailbox.Take(
        {g.ranks_[from], g.id_, p2p, seq, tag, step, static_cast<uint64_t>(s.offset)}, e,
        std::chrono::steady_clock::now() + g.job_->env.timeout);
    if (f.ok() || !(absl::IsUnavailable(f.status()) || absl::IsDeadlineExceeded(f.status())))
      return f;
    // a peer that cannot be heard from over TCP (another node, as a rule): say where it is
    const std::string& at = g.address_of(from);
    if (absl::StartsWith(at, "unix")) return f;
    return absl::Status(f.status().code(), absl::StrCat(f.status().message(), "; rank ",
                                                        g.ranks_[from], " is at ", at));
  }
};

absl::Status ProcessGroup::RingReduceScatter(Call& c, void* work, DType wd, void* stage,
                                             DType wire, int64_t total, ReduceOp op) {
  const int p = c.p(), r = c.r(), next = Mod(r + 1, p), prev = Mod(r - 1, p);
  if (p == 1) return absl::OkStatus();
  const int64_t w = DTypeSize(wd), per = SegmentElements(total, p, DTypeSize(wire));
  char* base = static_cast<char*>(work);
  // a segment goes out as it is, or (a half's f32 sums) rounded into `stage` (each chunk is
  // sent once, so its place there stays put until the collective ends)
  auto send = [&](uint32_t step, Span s) {
    if (wire == wd) return c.Send(next, step, work, wd, s);
    FromF32(wire, reinterpret_cast<float*>(base + s.offset * w),
            static_cast<char*>(stage) + s.offset * DTypeSize(wire), s.n);
    c.Send(next, step, stage, wire, s);
  };
  for (Span s : Chunk(total, p, Mod(r - 1, p), per)) send(0, s);
  for (int step = 0; step < p - 1; ++step) {
    const int chunk = Mod(r - step - 2, p);
    for (Span s : Chunk(total, p, chunk, per)) {
      ASSIGN_OR_RETURN(InFrame f, c.Take(prev, step, wire, s));
      f.ForEachRun(DTypeSize(wire), [&](const char* p, int64_t first, int64_t n) {
        ReduceFrom(wire, wd, op, base + (s.offset + first) * w, p, n);
      });
      if (step + 1 < p - 1) send(step + 1, s);
    }
  }
  return absl::OkStatus();
}

absl::Status ProcessGroup::RingAllGather(Call& c, void* data, DType wire, int64_t total,
                                         uint32_t first) {
  const int p = c.p(), r = c.r(), next = Mod(r + 1, p), prev = Mod(r - 1, p);
  if (p == 1) return absl::OkStatus();
  const int64_t w = DTypeSize(wire), per = SegmentElements(total, p, w);
  char* base = static_cast<char*>(data);
  for (Span s : Chunk(total, p, r, per)) c.Send(next, first, data, wire, s);
  for (int step = 0; step < p - 1; ++step) {
    const int chunk = Mod(r - step - 1, p);
    for (Span s : Chunk(total, p, chunk, per)) {
      ASSIGN_OR_RETURN(InFrame f, c.Take(prev, first + step, wire, s));
      f.CopyTo(base + s.offset * w);
      // passed on from where it now lies, not from the frame's buffers: a frame that lies in
      // shared memory would hold its slot until sent, and around a ring of full links no
      // slot would free
      if (step + 1 < p - 1) c.Send(next, first + step + 1, data, wire, s);
    }
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckArgs(const char* op, int64_t count, DType dtype, bool reduces) {
  if (count < 0)
    return absl::InvalidArgumentError(absl::StrCat(op, ": count ", count, " is negative"));
  if (reduces && !Reducible(dtype))
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": dtype ", DTypeName(dtype), " cannot be reduced; expected f32, f16, bf16 or i32"));
  if (DTypeSize(dtype) == 0)
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": dtype ", DTypeName(dtype), " has no size"));
  return absl::OkStatus();
}

}  // namespace

// Small tensors need latency, not bandwidth: every rank sends its tensor to every other in
// one step, and every rank folds all p of them in rank order (the same bits everywhere).
absl::Status ProcessGroup::DirectAllReduce(Call& c, void* data, DType wd, ReduceOp op) {
  const int p = c.p();
  const int64_t n = c.count, w = DTypeSize(wd);
  for (int to = 0; to < p; ++to)  // copies: `data` is overwritten before the frames are written
    if (to != c.r()) c.Send(to, 0, data, c.dtype, {0, n}, /*copy=*/true);
  std::vector<char> acc(n * w), theirs(n * DTypeSize(c.dtype)), v(n * w);
  for (int from = 0; from < p; ++from) {
    const void* src = data;
    if (from != c.r()) {
      ASSIGN_OR_RETURN(InFrame f, c.Take(from, 0, c.dtype, {0, n}));
      f.CopyTo(theirs.data());
      src = theirs.data();
    }
    char* dst = from == 0 ? acc.data() : v.data();
    if (wd != c.dtype)
      ToF32(c.dtype, src, reinterpret_cast<float*>(dst), n);
    else
      std::memcpy(dst, src, n * w);
    if (from > 0) Reduce(wd, op, acc.data(), v.data(), n);
  }
  if (op == ReduceOp::kAvg) Divide(wd, acc.data(), n, p);
  if (wd != c.dtype)
    FromF32(c.dtype, reinterpret_cast<float*>(acc.data()), data, n);
  else
    std::memcpy(data, acc.data(), n * w);
  return absl::OkStatus();
}

absl::Status ProcessGroup::DoAllReduce(uint64_t seq, void* data, int64_t count, DType dtype,
                                       ReduceOp op, const char* name) {
  RETURN_IF_ERROR(CheckArgs(name, count, dtype, true));
  const int p = world_size();
  if (p == 1) return absl::OkStatus();
  const DType wd = WorkDType(dtype);
  if (count * DTypeSize(dtype) * p <= kDirectBytes) {
    Call c{*this, seq, name, dtype, count, 1};
    return DirectAllReduce(c, data, wd, op);
  }
  Call c{*this, seq, name, dtype, count, static_cast<uint32_t>(2 * (p - 1))};
  const std::vector<Span> own = Chunk(count, p, rank(), count + 1);
  const int64_t begin = own[0].offset, n = own[0].n, w = DTypeSize(wd);
  // a half is summed in f32 here and travels as the half (each rank's partial sums rounded
  // as they go on, as NCCL's are): half the bytes of f32 on the wire
  char* work = wd == dtype ? static_cast<char*>(data) : job_->Scratch(count * (w + 2));
  if (wd != dtype) ToF32(dtype, data, reinterpret_cast<float*>(work), count);
  RETURN_IF_ERROR(RingReduceScatter(c, work, wd, work + count * w, dtype, count, op));
  char* mine = work + begin * w;
  if (op == ReduceOp::kAvg) Divide(wd, mine, n, p);
  if (wd != dtype)
    FromF32(dtype, reinterpret_cast<float*>(mine),
            static_cast<char*>(data) + begin * DTypeSize(dtype), n);
  return RingAllGather(c, data, dtype, count, p - 1);
}

absl::Status ProcessGroup::DoReduceScatter(uint64_t seq, const void* in, void* out, int64_t count,
                                           DType dtype, ReduceOp op) {
  RETURN_IF_ERROR(CheckArgs("reduce_scatter", count, dtype, true));
  const int p = world_size();
  const DType wd = WorkDType(dtype);
  const int64_t total = count * p, w = DTypeSize(wd);
  char* work = job_->Scratch(total * (w + (wd != dtype ? 2 : 0)));
  if (wd != dtype)
    ToF32(dtype, in, reinterpret_cast<float*>(work), total);
  else
    std::memcpy(work, in, total * w);
  Call c{*this, seq, "reduce_scatter", dtype, count, static_cast<uint32_t>(p - 1)};
  RETURN_IF_ERROR(RingReduceScatter(c, work, wd, work + total * w, dtype, total, op));
  char* mine = work + rank() * count * w;
  if (op == ReduceOp::kAvg) Divide(wd, mine, count, p);
  if (wd != dtype)
    FromF32(dtype, reinterpret_cast<float*>(mine), out, count);
  else
    std::memcpy(out, mine, count * w);
  return absl::OkStatus();
}

absl::Status ProcessGroup::DoAllGather(uint64_t seq, const void* in, void* out, int64_t count,
                                       DType dtype) {
  RETURN_IF_ERROR(CheckArgs("all_gather", count, dtype, false));
  const int64_t w = DTypeSize(dtype);
  std::memmove(static_cast<char*>(out) + rank() * count * w, in, count * w);
  Call c{*this, seq, "all_gather", dtype, count, static_cast<uint32_t>(world_size() - 1)};
  return RingAllGather(c, out, dtype, count * world_size(), 0);
}

absl::Status ProcessGroup::DoBroadcast(uint64_t seq, void* data, int64_t count, DType dtype,
                                       int root) {
  RETURN_IF_ERROR(CheckArgs("broadcast", count, dtype, false));
  const int p = world_size();
  if (root < 0 || root >= p)
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast: root ", root, " is not a rank (0..", p - 1, ")"));
  // a pipeline along the ring from the root: each segment is forwarded as it arrives
  Call c{*this, seq, "broadcast", dtype, count, 1};
  const int pos = Mod(rank() - root, p), next = Mod(rank() + 1, p), prev = Mod(rank() - 1, p);
  const int64_t w = DTypeSize(dtype);
  for (Span s : Chunk(count, 1, 0, SegmentElements(count, 1, w))) {
    if (pos == 0) {
      if (p > 1) c.Send(next, 0, data, dtype, s);
      continue;
    }
    ASSIGN_OR_RETURN(InFrame f, c.Take(prev, 0, dtype, s));
    f.CopyTo(static_cast<char*>(data) + s.offset * w);
    if (pos < p - 1) c.Send(next, 0, data, dtype, s);  // from there, as the all-gather
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckPeer(const char* op, int peer, int rank, int p) {
  if (peer < 0 || peer >= p || peer == rank)
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": peer ", peer, " is not another rank (this is rank ", rank, " of ", p, ")"));
  return absl::OkStatus();
}

}  // namespace

absl::Status ProcessGroup::DoSend(uint64_t seq, const void* data, int64_t count, DType dtype,
                                  int to, int tag) {
  RETURN_IF_ERROR(CheckArgs("send", count, dtype, false));
  RETURN_IF_ERROR(CheckPeer("send", to, rank(), world_size()));
  Call c{*this, seq, "send", dtype, count, 1, true, tag};
  const int64_t w = DTypeSize(dtype);
  for (Span s : Chunk(count, 1, 0, SegmentElements(count, 1, w))) c.Send(to, 0, data, dtype, s);
  return absl::OkStatus();
}

absl::Status ProcessGroup::DoRecv(uint64_t seq, void* data, int64_t count, DType dtype, int from,
                                  int tag) {
  RETURN_IF_ERROR(CheckArgs("recv", count, dtype, false));
  RETURN_IF_ERROR(CheckPeer("recv", from, rank(), world_size()));
  Call c{*this, seq, "send", dtype, count, 1, true, tag};
  const int64_t w = DTypeSize(dtype);
  for (Span s : Chunk(count, 1, 0, SegmentElements(count, 1, w))) {
    ASSIGN_OR_RETURN(InFrame f, c.Take(from, 0, dtype, s));
    f.CopyTo(static_cast<char*>(data) + s.offset * w);
  }
  return absl::OkStatus();
}

}  // namespace uopc
