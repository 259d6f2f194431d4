// The C prelude's helpers as the plugin's gcc compiles them: bf16 rounding gives the
// reference's bits, and a loop that selects between a constant and a rounded value (a
// causal mask) reads no subnormal float where its values have none: the rounding's NaN
// branch, computed for every lane when gcc vectorizes the select, made one of a zero
// (0x00400000), and every vector of a masked row paid the CPU's microcode assist for it
// (an 18x slower multiply on an Intel Xeon).
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <xmmintrin.h>

#include "backends/c/compiler.h"
#include "backends/c/render_c.h"
#include "core/float16.h"

namespace uopc {
namespace {

constexpr const char* kLoops = R"C(
UOPC_ENTRY void round_all(const float* x, float* out, int n) {
  for (int i = 0; i < n; i++) out[i] = uopc_rbf16(x[i]);
}
UOPC_ENTRY void pick_all(const int* g, const float* x, float* out, int n) {
  for (int i = 0; i < n; i++) out[i] = uopc_pickf(g[i], x[i]);
}
UOPC_ENTRY void store_all(const float* x, uint16_t* once, uint16_t* twice, int n) {
  for (int i = 0; i < n; i++) once[i] = uopc_f32_to_bf16(x[i]);
  for (int i = 0; i < n; i++) twice[i] = uopc_f32_to_bf16(uopc_rbf16(x[i]));
}
/* the bench GPT's bf16 softmax backward (x 0.17675781: 1/sqrt(32)), one head's 64 x 64 scores:
   row r keeps columns up to r; p, the probabilities, is 0 where masked */
UOPC_ENTRY void masked_rows(const float* restrict p, const float* restrict sums,
                            const uint16_t* restrict g, const float* restrict dots,
                            uint16_t* restrict out) {
  for (int r = 0; r < 64; r++) {
    float s = sums[r], d = dots[r];
    for (int c = 0; c < 64; c++) {
      float v = uopc_bf16_to_f32(g[r * 64 + c]);
      out[r * 64 + c] = uopc_f32_to_bf16(uopc_rbf16((float)(((r < c) ? 0.0f : ((float)uopc_rbf16(
          (float)((((((float)v / s) + d) * p[r * 64 + c]) * 0.6931472f) * 1.442695f)))) * 0.17675781f)));
    }
  }
}
)C";

class Prelude : public ::testing::Test {
 protected:
  void SetUp() override {
    CCompiler::Options o;
    o.cache_dir = ::testing::TempDir() + "/prelude_cache";
    o.flags.push_back("-mprefer-vector-width=512");  // (as the plugin on an AVX-512 CPU)
    CCompiler cc(o);
    absl::StatusOr<std::string> sealed = cc.Compile(CPrelude() + kLoops);
    ASSERT_TRUE(sealed.ok()) << sealed.status();
    absl::StatusOr<std::string> path = cc.Materialize(*sealed);
    ASSERT_TRUE(path.ok()) << path.status();
    lib_ = dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
  }
  void TearDown() override {
    if (lib_) dlclose(lib_);
  }
  template <typename F>
  F* Get(const char* name) {
    return reinterpret_cast<F*>(dlsym(lib_, name));
  }
  void* lib_ = nullptr;
};

TEST_F(Prelude, Bf16RoundingIsTheReferencesBitForBit) {
  auto* round_all = Get<void(const float*, float*, int)>("round_all");
  ASSERT_NE(round_all, nullptr);
  // every 65,537th float (both signs, zeros, subnormals, infinities, NaNs of every payload
  // reach) and the NaNs and ties by name
  std::vector<float> x;
  for (uint64_t u = 0; u < (1ull << 32); u += 65537)
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  for (uint32_t u : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7fffffffu, 0x3f808000u, 0x3f818000u,
                     0x00008000u, 0x80000000u})
    x.push_back(std::bit_cast<float>(u));
  std::vector<float> out(x.size());
  round_all(x.data(), out.data(), static_cast<int>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), static_cast<uint32_t>(F32ToBF16(x[i])) << 16)
        << "uopc_rbf16 of 0x" << std::hex << std::bit_cast<uint32_t>(x[i]);
}

// The C renderer stores a bf16 value without its last rounding (ToBits rounds): the same
// bits for every float.
TEST_F(Prelude, StoringABf16RoundsAsRoundingItFirst) {
  auto* store_all = Get<void(const float*, uint16_t*, uint16_t*, int)>("store_all");
  ASSERT_NE(store_all, nullptr);
  std::vector<float> x;
  for (uint64_t u = 0; u < (1ull << 32); u += 4099)
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  for (uint32_t u : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7fffffffu, 0x7f7fffffu, 0x3f808000u,
                     0x3f818000u, 0x00008000u, 0x80000000u})
    x.push_back(std::bit_cast<float>(u));
  std::vector<uint16_t> once(x.size()), twice(x.size());
  store_all(x.data(), once.data(), twice.data(), static_cast<int>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(twice[i], once[i]) << "0x" << std::hex << std::bit_cast<uint32_t>(x[i]);
}

// uopc_pickf(g, x) is g ? x : +0.0f bit for bit: NaNs with their payloads, -0 and infinities
// where g holds, +0 where it does not (the C renderer writes such a WHERE with it)
TEST_F(Prelude, APickIsTheSelectBitForBit) {
  auto* pick_all = Get<void(const int*, const float*, float*, int)>("pick_all");
  ASSERT_NE(pick_all, nullptr);
  std::vector<float> x;
  for (uint32_t bits : {0x7fc00001u, 0xffc12345u, 0x7f800001u, 0x80000000u, 0x00000000u,
                        0x7f800000u, 0xff800000u, 0x00000001u, 0x3fc00000u, 0xc2280000u})
    x.push_back(std::bit_cast<float>(bits));
  std::vector<int> g;
  std::vector<float> xs;
  for (int gate : {0, 1, 7, -1})
    for (float v : x) g.push_back(gate), xs.push_back(v);
  std::vector<float> out(xs.size());
  pick_all(g.data(), xs.data(), out.data(), static_cast<int>(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), g[i] ? std::bit_cast<uint32_t>(xs[i]) : 0u)
        << "gate " << g[i] << ", x 0x" << std::hex << std::bit_cast<uint32_t>(xs[i]);
}

TEST_F(Prelude, AMaskedRoundingReadsNoSubnormalWhereNoValueIsOne) {
  auto* masked_rows =
      Get<void(const float*, const float*, const uint16_t*, const float*, uint16_t*)>(
          "masked_rows");
  ASSERT_NE(masked_rows, nullptr);
  std::vector<float> p(64 * 64, 0.0f), sums(64, 1.0f), dots(64, 0.5f);
  std::vector<uint16_t> g(64 * 64, 0x3f00), out(64 * 64);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c <= r; c += 2)
      p[r * 64 + c] = 0.25f;  // (the others 0, as probabilities can be)
  // (a call's first vectors may read lanes that the code before it left in the registers:
  // the second call's are the first's)
  masked_rows(p.data(), sums.data(), g.data(), dots.data(), out.data());
  _mm_setcsr(_mm_getcsr() & ~0x3fu);  // (its flags; DE, bit 1: a subnormal operand was read)
  masked_rows(p.data(), sums.data(), g.data(), dots.data(), out.data());
  const unsigned flags = _mm_getcsr() & 0x3fu;
  EXPECT_EQ(flags & 0x2u, 0u) << "MXCSR flags 0x" << std::hex << flags;
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      const float v = BF16ToF32(g[r * 64 + c]);
      const float inner = BF16ToF32(
          F32ToBF16((((v / sums[r]) + dots[r]) * p[r * 64 + c]) * 0.6931472f * 1.442695f));
      const float want = (r < c ? 0.0f : inner) * 0.17675781f;
      ASSERT_EQ(out[r * 64 + c], F32ToBF16(want)) << r << ", " << c;
    }
}

}  // namespace
}  // namespace uopc
