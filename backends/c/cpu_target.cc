#include "backends/c/cpu_target.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace uopc {
namespace {

#if defined(__x86_64__)
uint64_t Xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// A feature: its CPUID leaf, subleaf, register (0 eax, 1 ebx, 2 ecx, 3 edx), bit, and the
// register state the OS must save for it (XCR0 bits).
struct CpuidBit {
  const char* name;
  uint32_t leaf, subleaf;
  int reg, bit;
  uint64_t xcr0;
};
constexpr uint64_t kAvxState = 0x6;            // SSE and AVX (YMM) state
constexpr uint64_t kAvx512State = 0xe6;        // + opmask, ZMM_Hi256, Hi16_ZMM
constexpr uint64_t kAmxState = 0x60000;        // XTILECFG, XTILEDATA
constexpr CpuidBit kFeatures[] = {
    {"sse4_2", 1, 0, 2, 20, 0},         {"fma", 1, 0, 2, 12, kAvxState},
    {"avx", 1, 0, 2, 28, kAvxState},    {"f16c", 1, 0, 2, 29, kAvxState},
    {"avx2", 7, 0, 1, 5, kAvxState},    {"avx512f", 7, 0, 1, 16, kAvx512State},
    {"avx512dq", 7, 0, 1, 17, kAvx512State}, {"avx512cd", 7, 0, 1, 28, kAvx512State},
    {"avx512bw", 7, 0, 1, 30, kAvx512State}, {"avx512vl", 7, 0, 1, 31, kAvx512State},
    {"avx512_vnni", 7, 0, 2, 11, kAvx512State}, {"avx512_fp16", 7, 0, 3, 23, kAvx512State},
    {"amx_bf16", 7, 0, 3, 22, kAmxState}, {"amx_tile", 7, 0, 3, 24, kAmxState},
    {"amx_int8", 7, 0, 3, 25, kAmxState}, {"avx512_bf16", 7, 1, 0, 5, kAvx512State},
};
#endif

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

// "48K", "32768K", "1M" -> bytes; 0 if it does not read.
int64_t SizeOf(const std::string& text) {
  if (text.empty()) return 0;
  int shift = text.back() == 'K' ? 10 : text.back() == 'M' ? 20 : 0;
  int64_t v = 0;
  if (!absl::SimpleAtoi(shift ? text.substr(0, text.size() - 1) : text, &v) || v < 0) return 0;
  return v << shift;
}

// The caches of cpu0, where sysfs has them.
void ReadCaches(const std::string& sysfs_cpu, Target* t) {
  for (int i = 0; i < 16; ++i) {
    const std::string dir = absl::StrCat(sysfs_cpu, "/cpu0/cache/index", i, "/");
    const std::string level = ReadLine(dir + "level"), type = ReadLine(dir + "type");
    if (level.empty()) break;
    const int64_t size = SizeOf(ReadLine(dir + "size"));
    int ways = 0;
    if (size <= 0) continue;
    if (level == "1" && type == "Data") {
      t->l1d_bytes = size;
      if (absl::SimpleAtoi(ReadLine(dir + "ways_of_associativity"), &ways) && ways > 0)
        t->l1d_ways = ways;
    } else if (level == "2" && type != "Instruction") {
      t->l2_bytes = size;
    } else if (level == "3" && type != "Instruction") {
      t->l3_bytes = size;
    }
  }
}

}  // namespace

std::vector<std::string> HostCpuFeatures() {
  std::vector<std::string> out;
#if defined(__x86_64__)
  uint32_t r[4];
  uint32_t max_leaf = __get_cpuid_max(0, nullptr);
  __cpuid_count(1, 0, r[0], r[1], r[2], r[3]);
  const bool osxsave = (r[2] >> 27) & 1;
  const uint64_t xcr0 = osxsave ? Xcr0() : 0;
  for (const CpuidBit& f : kFeatures) {
    if (f.leaf > max_leaf) continue;
    __cpuid_count(f.leaf, f.subleaf, r[0], r[1], r[2], r[3]);
    if (((r[f.reg] >> f.bit) & 1) && (xcr0 & f.xcr0) == f.xcr0) out.emplace_back(f.name);
  }
#endif
  std::sort(out.begin(), out.end());
  return out;
}

Target HostCpuTarget(const std::string& sysfs_cpu) {
  Target t = Target::ReferenceCpu();
#if defined(__x86_64__)
  t.arch = "x86_64";
#elif defined(__aarch64__)
  t.arch = "aarch64";
#endif
  t.features = HostCpuFeatures();
  const bool avx512 = t.Has("avx512f");
  t.vector_bits = avx512 ? 512 : t.Has("avx") ? 256 : 128;
  t.registers = avx512 ? 32 : 16;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  t.cores = online > 0 ? static_cast<int>(online) : 1;
  ReadCaches(sysfs_cpu, &t);
  t.matrix_units.clear();
  // AMX: a 16-row tile of 16 f32 sums, from 16 x 32 bf16 times 32 x 16 (tdpbf16ps)
  if (t.Has("amx_bf16") && t.Has("amx_tile"))
    t.matrix_units.push_back({16, 16, 32, DType::kBF16, DType::kF32});
  return t;
}

}  // namespace uopc
