// The packed copies of a matmul's b that the C plugin keeps between calls
// (backends/c/packed_b_cache.h): kept from the second call at one content, dropped when the
// content changes or the buffer goes, least recently used first where the capacity is
// reached; and avx2_sgemm multiplies by the kept copy rather than by b itself (shown by
// changing b behind the version's back), in each way its threads share b.
#include "backends/c/packed_b_cache.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "backends/c/avx2_sgemm.h"
#include "backends/c/thread_pool.h"
#include "core/float16.h"

namespace uopc::cpu {
namespace {

PackedBCache::Key KeyOf(uint64_t id, int64_t k = 64) {
  PackedBCache::Key key;
  key.id = id;
  key.shape[3] = k;
  return key;
}

TEST(PackedBCache, KeptFromTheSecondCallAtOneContent) {
  PackedBCache cache;
  const PackedBCache::Key key = KeyOf(1);
  EXPECT_EQ(cache.Find(key, {1, 0}, 256).data, nullptr);  // first seen: packed as always
  PackedBCache::Use fill = cache.Find(key, {1, 0}, 256);
  ASSERT_NE(fill.data, nullptr);
  EXPECT_FALSE(fill.filled);
  EXPECT_EQ(cache.bytes(), 1024u);
  EXPECT_EQ(cache.Find(key, {1, 0}, 256).data, nullptr);  // (being filled: not shared yet)
  cache.Ready(key, {1, 0});
  PackedBCache::Use kept = cache.Find(key, {1, 0}, 256);
  EXPECT_EQ(kept.data, fill.data);
  EXPECT_TRUE(kept.filled);
  const float* memory = kept.data.get();
  // a write: packed as always at the first call with the new content, and again into the
  // same memory at the second (where no call still holds the old content: else new memory)
  EXPECT_EQ(cache.Find(key, {1, 1}, 256).data, nullptr);
  EXPECT_EQ(cache.bytes(), 1024u);
  cache.Ready(key, {1, 0});  // (a fill of the old content ends late: nothing to mark)
  PackedBCache::Use held_elsewhere = cache.Find(key, {1, 1}, 256);
  ASSERT_NE(held_elsewhere.data, nullptr);
  EXPECT_NE(held_elsewhere.data.get(), memory);
  EXPECT_EQ(cache.bytes(), 1024u);
  memory = held_elsewhere.data.get();
  fill = kept = held_elsewhere = {};
  EXPECT_EQ(cache.Find(key, {1, 2}, 256).data, nullptr);
  PackedBCache::Use again = cache.Find(key, {1, 2}, 256);
  EXPECT_EQ(again.data.get(), memory);
  EXPECT_FALSE(again.filled);
  cache.Ready(key, {1, 2});
  EXPECT_TRUE(cache.Find(key, {1, 2}, 256).filled);
}

TEST(PackedBCache, NothingKeptOfMemoryTheHostMayWrite) {
  PackedBCache cache;
  for (int call = 0; call < 3; ++call) EXPECT_EQ(cache.Find(KeyOf(0), {0, 5}, 256).data, nullptr);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(PackedBCache, AFreedBuffersCopiesGo) {
  PackedBCache cache;
  for (uint64_t id : {1, 2})
    for (int call = 0; call < 2; ++call) cache.Find(KeyOf(id), {id, 0}, 256);
  EXPECT_EQ(cache.bytes(), 2048u);
  cache.Forget(1);
  EXPECT_EQ(cache.bytes(), 1024u);
  EXPECT_EQ(cache.Find(KeyOf(1), {1, 0}, 256).data, nullptr);  // (seen anew)
  cache.Forget(3);                                             // (never seen)
  EXPECT_EQ(cache.bytes(), 1024u);
}

TEST(PackedBCache, TheLeastRecentlyUsedGoWhereTheCapacityIsReached) {
  PackedBCache cache;
  cache.SetCapacity(3000);
  auto keep = [&](uint64_t id) {
    cache.Find(KeyOf(id), {id, 0}, 256);
    cache.Find(KeyOf(id), {id, 0}, 256);
    cache.Ready(KeyOf(id), {id, 0});
  };
  keep(1);
  keep(2);
  EXPECT_TRUE(cache.Find(KeyOf(1), {1, 0}, 256).filled);  // 1 used after 2
  keep(3);                                                // 2 goes
  EXPECT_EQ(cache.bytes(), 2048u);
  EXPECT_TRUE(cache.Find(KeyOf(1), {1, 0}, 256).filled);
  EXPECT_TRUE(cache.Find(KeyOf(3), {3, 0}, 256).filled);
  EXPECT_FALSE(cache.Find(KeyOf(2), {2, 0}, 256).filled);
  // larger than the capacity: never kept
  for (int call = 0; call < 3; ++call) EXPECT_EQ(cache.Find(KeyOf(4), {4, 0}, 1000).data, nullptr);
  cache.SetCapacity(1024);  // (shrinking drops the least recently used)
  EXPECT_EQ(cache.bytes(), 1024u);
  cache.SetCapacity(0);
  EXPECT_EQ(cache.bytes(), 0u);
  for (int call = 0; call < 3; ++call) EXPECT_EQ(cache.Find(KeyOf(5), {5, 0}, 1).data, nullptr);
}

bool HasAvx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

std::vector<float> Values(int64_t count, float scale) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = std::sin(scale * static_cast<float>(i));
  return v;
}

// (m, k) @ (k, n), both row-major, f32 or (`bf16`) both operands' bf16 roundings
// (avx2_bf16_to_f32, which converts b as it packs it); b stays where it lies as it changes.
class Operands {
 public:
  Operands(int64_t m, int64_t k, int64_t n, bool bf16) : m_(m), k_(k), n_(n), bf16_(bf16) {
    Set(a_, a16_, Values(m * k, 0.37f));
    b_.resize(k * n);
    b16_.resize(k * n);
  }
  void SetB(const std::vector<float>& values) { Set(b_, b16_, values); }
  std::vector<float> Multiply(BufferVersion version) const {
    MatmulParams p;
    p.m = m_, p.n = n_, p.k = k_;
    p.a_row = k_, p.a_col = 1, p.b_row = n_, p.b_col = 1, p.out_row = n_;
    std::vector<float> out(m_ * n_);
    const void* a = bf16_ ? static_cast<const void*>(a16_.data()) : a_.data();
    const void* b = bf16_ ? static_cast<const void*>(b16_.data()) : b_.data();
    EXPECT_TRUE(RunAvx2Sgemm(p, out.data(), false, a, b, bf16_, version, 32 << 10, 512 << 10).ok());
    return out;
  }

 private:
  static void Set(std::vector<float>& f32, std::vector<uint16_t>& bf16,
                  const std::vector<float>& values) {
    f32.resize(values.size());
    bf16.resize(values.size());
    std::copy(values.begin(), values.end(), f32.begin());
    for (size_t i = 0; i < values.size(); ++i) bf16[i] = F32ToBF16(values[i]);
  }
  int64_t m_, k_, n_;
  bool bf16_;
  std::vector<float> a_, b_;
  std::vector<uint16_t> a16_, b16_;
};

void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
}

// (m, n, bf16): on 2 threads (UOPC_THREADS, set by the BUILD rule), 64 x 62 splits b's column
// panels among the threads, each packing its own; 200 x 70 has them pack b together, then
// split the row panels. k = 300 is two blocks of k, and each has a last panel short of 16.
class KeptB : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, bool>> {};

TEST_P(KeptB, Avx2SgemmMultipliesByTheKeptCopy) {
  if (!HasAvx2()) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  const auto [m, n, bf16] = GetParam();
  const int64_t k = 300;
  Operands x(m, k, n, bf16);
  const std::vector<float> b = Values(k * n, 0.11f), changed = Values(k * n, 0.23f);
  x.SetB(changed);
  const std::vector<float> want_changed = x.Multiply({});  // (never kept: packed each call)
  x.SetB(b);
  const std::vector<float> want = x.Multiply({});
  const BufferVersion v{1000, 3};
  for (int call = 0; call < 3; ++call) ExpectSameBits(x.Multiply(v), want);
  x.SetB(changed);  // behind the version's back: the kept copy is what is multiplied
  ExpectSameBits(x.Multiply(v), want);
  ExpectSameBits(x.Multiply({v.id, v.writes + 1}), want_changed);
  PackedBCache::Get().Forget(v.id);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KeptB,
                         ::testing::Combine(::testing::Values(64, 200), ::testing::Values(62, 70),
                                            ::testing::Bool()));

}  // namespace
}  // namespace uopc::cpu
