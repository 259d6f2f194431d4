// The C plugin's several CPU devices (UOPC_CPU_DEVICES=3 here, UOPC_CPU_MEMORY=4M each,
// and CPU:2 lost at its second launch by UOPC_CPU_FAULT, all set by the BUILD rule): each has
// its own memory and queue, peer copies between them, events that order one queue after
// another, and a device that fails leaves the others working.
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>

#include <gtest/gtest.h>

#include "core/matmul_call.h"
#include "core/serialize.h"
#include "devices/kernel_cache.h"
#include "devices/registry.h"

namespace uopc {
namespace {

Device& Get(const char* name) {
  absl::StatusOr<Device*> d = DeviceRegistry::Get().GetDevice(name);
  EXPECT_TRUE(d.ok()) << d.status();
  return **d;
}

template <typename T>
std::vector<T> Read(const Buffer& b) {
  std::vector<T> v(b.count());
  EXPECT_TRUE(b.device()->CopyOut(v.data(), b, b.bytes()).ok());
  return v;
}

// out[i] = in[i] * 2 + 1 over n elements, looped `rounds` times (a kernel that takes a while)
UOp Scale(int64_t n, int rounds) {
  UOp out = UOp::Buffer(DType::kI32, 0, n), in = UOp::Buffer(DType::kI32, 1, n);
  UOp r = UOp::Range(rounds, 0), i = UOp::Range(n, 1);
  return UOp::Sink({out.Index(i).Store(in.Index(i).Load() * 2 + 1).End({i, r})});
}

TEST(CpuDevices, SeveralDevicesEachWithItsOwnName) {
  std::vector<std::string> names, uids;
  for (Device* d : DeviceRegistry::Get().DevicesOf(Get("CPU").plugin())) {
    names.push_back(d->name());
    uids.push_back(d->uid());
    EXPECT_EQ(d->caps() & UOPC_DEVICE_CAP_COPY_PEER, UOPC_DEVICE_CAP_COPY_PEER);
    EXPECT_EQ(d->mem_total(), 4u << 20);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"CPU:0", "CPU:1", "CPU:2"}));
  EXPECT_NE(uids[0], uids[1]);
  EXPECT_EQ(&Get("cpu"), &Get("CPU:0"));  // a bare type is device 0, in either case
  EXPECT_EQ(&Get("cpu:1"), &Get("CPU:1"));
}

TEST(CpuDevices, EachAccountsForItsOwnMemory) {
  Device &a = Get("CPU:0"), &b = Get("CPU:1");
  a.allocator().EmptyCache();
  b.allocator().EmptyCache();
  uint64_t before = a.Memory()->bytes_in_use;
  {
    Buffer big = *b.Allocate(DType::kU8, 3 << 20);
    EXPECT_EQ(b.Memory()->bytes_in_use, 3u << 20);
    absl::StatusOr<Buffer> more = b.Allocate(DType::kU8, 2 << 20);
    EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(more.status().message(),
              "c plugin: cannot allocate 2097152 bytes on CPU:1: 3145728 of its 4194304 bytes are "
              "in use");
    Buffer other = *a.Allocate(DType::kU8, 2 << 20);  // CPU:0 has its own 4 MiB
    EXPECT_EQ(a.Memory()->bytes_in_use, before + (2u << 20));
  }
  b.allocator().EmptyCache();
  EXPECT_EQ(b.Memory()->bytes_in_use, 0u);
}

TEST(CpuDevices, PeerCopyOrderedAfterTheOtherDevicesKernel) {
  Device &a = Get("CPU:0"), &b = Get("CPU:1");
  const int64_t n = 1 << 16;
  std::vector<int32_t> x(n);
  std::iota(x.begin(), x.end(), 0);
  Buffer in = *a.Allocate(DType::kI32, n), out = *a.Allocate(DType::kI32, n),
         there = *b.Allocate(DType::kI32, n);
  ASSERT_TRUE(a.CopyIn(in, x.data(), in.bytes()).ok());
  KernelCache kernels(a);
  // a's kernel is still running (or queued) when b is told to copy its result
  absl::StatusOr<Event> computed = kernels.Launch({Scale(n, 50), {out, in}, {}});
  ASSERT_TRUE(computed.ok()) << computed.status();
  ASSERT_TRUE(b.Wait(*computed).ok());
  absl::StatusOr<Event> copied = b.EnqueueCopy(there, 0, out, 0, out.bytes());
  ASSERT_TRUE(copied.ok()) << copied.status();
  ASSERT_TRUE(copied->Wait().ok());
  std::vector<int32_t> got = Read<int32_t>(there);
  for (int64_t i = 0; i < n; i += 4099) EXPECT_EQ(got[i], 2 * i + 1) << i;
  // offsets and ranges are checked on both sides
  EXPECT_EQ(b.EnqueueCopy(there, 8, out, 0, out.bytes()).status().message(),
            "copy to CPU:1: 262144 bytes at offset 8 of a 262144-byte buffer");
  EXPECT_EQ(b.EnqueueCopy(there, 0, Buffer(), 0, 4).status().message(),
            "copy: no source buffer");
}

// A supplied matmul keeps a b that it multiplies unchanged packed
// (backends/c/packed_b_cache.h). Every way the plugin writes a buffer, and the host writing at
// its address, makes the next call pack b again: after each, three calls give the result for
// a fresh copy of b (a buffer never seen, so packed anew), bit for bit.
TEST(CpuDevices, ASuppliedMatmulSeesEveryWriteToItsB) {
  Device& d = Get("CPU:0");
  bool supplied = false;
  for (const SuppliedKernel& k : d.target().kernels) supplied |= k.name == "avx2_sgemm";
  if (!supplied) GTEST_SKIP() << "this CPU has no AVX2 and FMA (no avx2_sgemm)";
  const int64_t m = 64, k = 300, n = 62;
  MatmulParams p;
  p.m = m, p.n = n, p.k = k, p.a_row = k, p.a_col = 1, p.b_row = n, p.b_col = 1, p.out_row = n;
  const std::array<int64_t, MatmulParams::kCount> params = p.Values();
  auto values = [](int64_t count, float scale) {
    std::vector<float> v(count);
    for (int64_t i = 0; i < count; ++i) v[i] = std::sin(scale * static_cast<float>(i));
    return v;
  };
  Buffer a = *d.Allocate(DType::kF32, m * k), w = *d.Allocate(DType::kF32, k * n),
         out = *d.Allocate(DType::kF32, m * n), other = *d.Allocate(DType::kF32, k * n);
  ASSERT_TRUE(d.CopyIn(a, values(m * k, 0.37f).data(), a.bytes()).ok());
  auto multiply = [&](const Buffer& x, const Buffer& b, const Buffer& into) {
    absl::StatusOr<Event> done =
        d.LaunchSupplied("avx2_sgemm", {into.handle(), x.handle(), b.handle()}, {}, params);
    ASSERT_TRUE(done.ok()) << done.status();
    ASSERT_TRUE(done->Wait().ok());
  };
  auto expect_multiplied = [&](const char* after) {
    SCOPED_TRACE(after);
    Buffer fresh = *d.Allocate(DType::kF32, k * n);
    ASSERT_TRUE(d.EnqueueCopy(fresh, 0, w, 0, w.bytes())->Wait().ok());
    multiply(a, fresh, out);
    const std::vector<float> want = Read<float>(out);
    for (int call = 0; call < 3; ++call) {
      multiply(a, w, out);
      const std::vector<float> got = Read<float>(out);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << call;
    }
  };
  ASSERT_TRUE(d.CopyIn(w, values(k * n, 0.11f).data(), w.bytes()).ok());
  expect_multiplied("first");
  ASSERT_TRUE(d.CopyIn(w, values(k * n, 0.13f).data(), w.bytes()).ok());
  expect_multiplied("a copy from the host");
  ASSERT_TRUE(d.CopyIn(other, values(k * n, 0.17f).data(), other.bytes()).ok());
  ASSERT_TRUE(d.EnqueueCopy(w, 0, other, 0, w.bytes())->Wait().ok());
  expect_multiplied("a copy on the device");
  // slot 0 = slot 1 * -0.5, and the other way round
  UOp first = UOp::Buffer(DType::kF32, 0, k * n), second = UOp::Buffer(DType::kF32, 1, k * n);
  UOp i = UOp::Range(k * n, 0);
  const UOp half = UOp::Sink(
      {first.Index(i).Store(second.Index(i).Load() * UOp::ConstFloat(DType::kF32, -0.5)).End({i})});
  const UOp back = UOp::Sink(
      {second.Index(i).Store(first.Index(i).Load() * UOp::ConstFloat(DType::kF32, -0.5)).End({i})});
  {
    KernelCache kernels(d);  // (its program stays loaded until the launch is done)
    absl::StatusOr<Event> e = kernels.Launch({half, {w, other}, {}});
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_TRUE(e->Wait().ok());
  }
  expect_multiplied("a generated kernel");
  MatmulParams q = p;  // w = other[:, :8] @ a[:8, :n], k x n
  q.m = k, q.k = 8, q.a_row = n, q.b_row = k;
  {
    absl::StatusOr<Event> e =
        d.LaunchSupplied("avx2_sgemm", {w.handle(), other.handle(), a.handle()}, {}, q.Values());
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_TRUE(e->Wait().ok());
  }
  expect_multiplied("a supplied matmul");
  {
    // A launch counts writes to the buffers that its kernel's render found it writes, and to
    // no other: a kernel that only reads b leaves b's copy kept. Shown by a program whose
    // entry's name was last rendered for `back` (which writes slot 1) while its code is
    // `half`'s (which writes slot 0, w): w changes unseen, and the kept copy is multiplied.
    multiply(a, w, out);
    const std::vector<float> kept = Read<float>(out);
    const std::string name = "k_rendered_last_as_back";
    absl::StatusOr<RenderedKernel> code = d.Render(SerializeGraph(half), name);
    ASSERT_TRUE(code.ok()) << code.status();
    ASSERT_TRUE(d.Render(SerializeGraph(back), name).ok());
    absl::StatusOr<std::shared_ptr<Program>> program = d.Build({code->source}, {name});
    ASSERT_TRUE(program.ok()) << program.status();
    absl::StatusOr<Event> e =
        d.Launch(**program, 0, {w.handle(), other.handle()}, {}, {}, code->dims);
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_TRUE(e->Wait().ok());
    multiply(a, w, out);
    const std::vector<float> got = Read<float>(out);
    EXPECT_EQ(std::memcmp(got.data(), kept.data(), got.size() * sizeof(float)), 0);
    Buffer fresh = *d.Allocate(DType::kF32, k * n);  // (w did change)
    ASSERT_TRUE(d.EnqueueCopy(fresh, 0, w, 0, w.bytes())->Wait().ok());
    multiply(a, fresh, out);
    EXPECT_NE(std::memcmp(Read<float>(out).data(), kept.data(), got.size() * sizeof(float)), 0);
    ASSERT_TRUE(d.CopyIn(w, values(k * n, 0.29f).data(), w.bytes()).ok());
    expect_multiplied("a copy from the host, after the unseen write");
  }
  absl::StatusOr<void*> at = d.Address(w);
  ASSERT_TRUE(at.ok()) << at.status();
  ASSERT_TRUE(d.Synchronize().ok());
  for (int round = 0; round < 2; ++round) {
    const std::vector<float> v = values(k * n, 0.19f + round);
    std::memcpy(*at, v.data(), w.bytes());
    expect_multiplied(round == 0 ? "the host, at the address" : "the host again");
  }
}

TEST(CpuDevices, AKernelLaunchOnAnotherDevicesBufferIsRefused) {
  Device &a = Get("CPU:0"), &b = Get("CPU:1");
  Buffer mine = *a.Allocate(DType::kI32, 8), theirs = *b.Allocate(DType::kI32, 8);
  absl::StatusOr<Event> e = KernelCache(a).Launch({Scale(8, 1), {mine, theirs}, {}});
  EXPECT_EQ(e.status().message(),
            "launch on CPU:0: buffer slot 1 wants 8 x i32; the buffer lives on CPU:1");
}

TEST(CpuDevices, AFreedBufferHandleIsRefusedNotFollowed) {
  Device& d = Get("CPU:1");
  const Plugin& p = d.plugin();
  uopc_buffer_alloc_args alloc{};
  alloc.device = d.handle();
  alloc.size = 64;
  alloc.align = 64;
  ASSERT_TRUE(p.Call(&alloc).ok());
  uopc_buffer* b = alloc.buffer;
  ASSERT_TRUE(p.Call(&alloc).ok());
  uopc_buffer* other = alloc.buffer;
  uopc_buffer_free_args free{};
  free.buffer = b;
  ASSERT_TRUE(p.Call(&free).ok());
  char host[64];
  uopc_copy_d2h_args out{};
  out.queue = d.queue();
  out.dst = host;
  out.src = b;
  out.size = 64;
  absl::Status s = p.Call(&out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("is not a live buffer of this plugin (freed already?)"),
            std::string::npos)
      << s;
  uopc_copy_args a{};
  a.queue = d.queue();
  a.dst = other;
  a.src = b;
  a.size = 64;
  EXPECT_EQ(p.Call(&a).code(), absl::StatusCode::kInvalidArgument);
  absl::Status twice = p.Call(&free);
  EXPECT_NE(twice.message().find("(freed twice?)"), std::string::npos) << twice;
  free.buffer = other;
  ASSERT_TRUE(p.Call(&free).ok());
}

TEST(CpuDevices, ALostDeviceFailsCleanlyAndTheOthersGoOn) {
  Device &lost = Get("CPU:2"), &fine = Get("CPU:0");
  const int64_t n = 64;
  std::vector<int32_t> x(n, 3);
  Buffer in = *lost.Allocate(DType::kI32, n), out = *lost.Allocate(DType::kI32, n);
  ASSERT_TRUE(lost.CopyIn(in, x.data(), in.bytes()).ok());
  KernelCache kernels(lost);
  ASSERT_TRUE(kernels.Launch({Scale(n, 1), {out, in}, {}})->Wait().ok());  // launch 1
  absl::StatusOr<Event> second = kernels.Launch({Scale(n, 1), {in, out}, {}});
  ASSERT_TRUE(second.ok());  // queued; it fails when it runs
  absl::Status s = second->Wait();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "DEVICE_LOST: c plugin: CPU:2 was lost during a launch (UOPC_CPU_FAULT)");
  EXPECT_EQ(lost.Synchronize().message(), s.message());
  // every later call on it fails at once
  EXPECT_EQ(lost.Allocate(DType::kI32, 4).status().message(),
            "DEVICE_LOST: c plugin: CPU:2 is lost (UOPC_CPU_FAULT)");
  EXPECT_EQ(lost.CopyIn(in, x.data(), 4).code(), absl::StatusCode::kUnavailable);
  // and the other devices are untouched
  Buffer a = *fine.Allocate(DType::kI32, n), b = *fine.Allocate(DType::kI32, n);
  ASSERT_TRUE(fine.CopyIn(a, x.data(), a.bytes()).ok());
  ASSERT_TRUE(KernelCache(fine).Run({{Scale(n, 1), {b, a}, {}}}).ok());
  EXPECT_EQ(Read<int32_t>(b)[5], 7);
}

// A job's names: "rankN/CPU:1" is this process's CPU:1 on its own rank, and a device with no
// memory here on another rank's (what a pipeline stage of another process lives on).
TEST(CpuDevices, DevicesOfOtherRanksHaveNamesAndNoMemoryHere) {
  std::unique_ptr<DeviceRegistry> r = DeviceRegistry::Discover(DiscoveryOptions::FromEnvironment());
  absl::StatusOr<Device*> before = r->GetDevice("rank1/CPU:0");
  EXPECT_FALSE(before.ok());
  EXPECT_NE(before.status().message().find("in no job"), std::string::npos) << before.status();
  r->SetJobRank(0);
  ASSERT_EQ(*r->GetDevice("rank0/CPU:1"), *r->GetDevice("CPU:1"));
  absl::StatusOr<Device*> peer = r->GetDevice("rank1/cpu:1");
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ((*peer)->name(), "rank1/CPU:1");
  EXPECT_EQ((*peer)->peer_rank(), 1);
  EXPECT_EQ(*r->GetDevice("rank1/CPU:1"), *peer);  // one device per name
  EXPECT_NE(*r->GetDevice("rank2/CPU:1"), *peer);
  absl::StatusOr<Buffer> b = (*peer)->Allocate(DType::kF32, 1 << 20);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->count(), 1 << 20);
  EXPECT_EQ(b->handle(), nullptr);
  std::vector<float> host(4);
  absl::Status read = (*peer)->CopyOut(host.data(), *b, 16);
  EXPECT_EQ(read.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(read.message().find("rank1/CPU:1: the device is rank 1's"), std::string::npos) << read;
  EXPECT_FALSE((*peer)->Address(*b).ok());
  EXPECT_TRUE((*peer)->Synchronize().ok());  // nothing queued here
  EXPECT_FALSE(r->GetDevice("rank1/GPU:0").ok());
  EXPECT_FALSE(r->GetDevice("rankx/CPU:0").ok());
}

}  // namespace
}  // namespace uopc
