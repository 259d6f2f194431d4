#include "core/target.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace uopc {
namespace {

// 49152 -> "48K", 2097152 -> "2M"; sizes that are no whole K stay in bytes.
std::string SizeString(int64_t bytes) {
  const char* units[] = {"G", "M", "K"};
  const int shifts[] = {30, 20, 10};
  for (int i = 0; i < 3; ++i)
    if (bytes != 0 && bytes % (int64_t{1} << shifts[i]) == 0)
      return absl::StrCat(bytes >> shifts[i], units[i]);
  return absl::StrCat(bytes);
}

bool ParseSize(absl::string_view s, int64_t* out) {
  int shift = 0;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      default: break;  // (plain bytes)
    }
    if (shift) s.remove_suffix(1);
  }
  int64_t v = 0;
  if (!absl::SimpleAtoi(s, &v) || v < 0 || v > (int64_t{1} << (62 - shift))) return false;
  *out = v << shift;
  return true;
}

bool ParseCount(absl::string_view s, int* out) {
  return absl::SimpleAtoi(s, out) && *out >= 0;
}

}  // namespace

bool Target::Has(absl::string_view feature) const {
  return std::find(features.begin(), features.end(), feature) != features.end();
}

int Target::Lanes(DType t) const {
  const int bits = DTypeSize(t) * 8;
  return IsCpu() && bits > 0 && vector_bits >= bits ? vector_bits / bits : 1;
}

Target Target::ReferenceCpu() {
  Target t;
  t.features = {"avx", "avx2", "avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl", "fma"};
  t.vector_bits = 512;
  t.registers = 32;
  t.l1d_bytes = 48 << 10;
  t.l1d_ways = 12;
  t.l2_bytes = 1 << 20;
  return t;
}

Target Target::ReferenceGpu() {
  Target t;
  t.device_class = TargetClass::kGpu;
  t.arch = "sm_50";
  t.vector_bits = 0;
  t.registers = 255;
  t.cores = 1;
  t.l1d_bytes = 0;
  t.l1d_ways = 0;
  t.l2_bytes = 0;
  t.warp = 32;
  t.threads_per_block = 1024;
  t.shared_per_block = 48 << 10;
  return t;
}

std::string MatrixUnitToString(const MatrixUnit& u) {
  return absl::StrCat(u.m, "x", u.n, "x", u.k, ":", DTypeName(u.input), "->",
                      DTypeName(u.accumulator));
}

absl::StatusOr<MatrixUnit> ParseMatrixUnit(absl::string_view text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "target: matrix unit \"", text, "\": expected MxNxK:INPUT->ACCUMULATOR (16x8x16:f16->f32)"));
  };
  std::vector<absl::string_view> shape_types = absl::StrSplit(text, ':');
  if (shape_types.size() != 2) return bad();
  std::vector<absl::string_view> mnk = absl::StrSplit(shape_types[0], 'x');
  std::vector<absl::string_view> types = absl::StrSplit(shape_types[1], "->");
  MatrixUnit u;
  if (mnk.size() != 3 || types.size() != 2 || !ParseCount(mnk[0], &u.m) ||
      !ParseCount(mnk[1], &u.n) || !ParseCount(mnk[2], &u.k))
    return bad();
  std::optional<DType> in = ParseDType(types[0]), acc = ParseDType(types[1]);
  if (!in || !acc) return bad();
  u.input = *in;
  u.accumulator = *acc;
  return u;
}

std::string SuppliedKernelToString(const SuppliedKernel& k) {
  return absl::StrCat(k.name, ":", k.op, ":", DTypeName(k.a), "*", DTypeName(k.b), "->",
                      DTypeName(k.out), ":", k.min_flops);
}

absl::StatusOr<SuppliedKernel> ParseSuppliedKernel(absl::string_view text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "target: kernel \"", text,
        "\": expected NAME:OP:A*B->OUT:MIN_FLOPS (openblas_sgemm:matmul:f32*f32->f32:0)"));
  };
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() != 4 || parts[0].empty() || parts[1].empty()) return bad();
  std::vector<absl::string_view> in_out = absl::StrSplit(parts[2], "->");
  if (in_out.size() != 2) return bad();
  std::vector<absl::string_view> ab = absl::StrSplit(in_out[0], '*');
  if (ab.size() != 2) return bad();
  std::optional<DType> a = ParseDType(ab[0]), b = ParseDType(ab[1]), out = ParseDType(in_out[1]);
  SuppliedKernel k{std::string(parts[0]), std::string(parts[1])};
  if (!a || !b || !out || !absl::SimpleAtoi(parts[3], &k.min_flops) || k.min_flops < 0)
    return bad();
  k.a = *a;
  k.b = *b;
  k.out = *out;
  return k;
}

std::string Target::ToString() const {
  std::vector<std::string> matrix;
  for (const MatrixUnit& u : matrix_units) matrix.push_back(MatrixUnitToString(u));
  std::string out = absl::StrCat("class=", IsGpu() ? "gpu" : "cpu", " arch=", arch,
                                 " features=", absl::StrJoin(features, ","));
  if (IsCpu()) absl::StrAppend(&out, " vector_bits=", vector_bits);
  absl::StrAppend(&out, " registers=", registers, " cores=", cores, " l1d=",
                  SizeString(l1d_bytes), "/", l1d_ways, " l2=", SizeString(l2_bytes),
                  " l3=", SizeString(l3_bytes));
  if (IsGpu())
    absl::StrAppend(&out, " warp=", warp, " threads_per_block=", threads_per_block,
                    " shared_per_block=", SizeString(shared_per_block));
  absl::StrAppend(&out, " matrix=", absl::StrJoin(matrix, ","));
  if (!kernels.empty()) {
    std::vector<std::string> ks;
    for (const SuppliedKernel& k : kernels) ks.push_back(SuppliedKernelToString(k));
    absl::StrAppend(&out, " kernels=", absl::StrJoin(ks, ","));
  }
  return out;
}

absl::StatusOr<Target> ParseTarget(absl::string_view text) {
  std::vector<std::pair<absl::string_view, absl::string_view>> words;
  for (absl::string_view w : absl::StrSplit(text, ' ', absl::SkipWhitespace())) {
    const size_t eq = w.find('=');
    if (eq == absl::string_view::npos)
      return absl::InvalidArgumentError(
          absl::StrCat("target: \"", w, "\" is not KEY=VALUE (in \"", text, "\")"));
    words.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  if (words.empty() || words[0].first != "class" ||
      (words[0].second != "cpu" && words[0].second != "gpu"))
    return absl::InvalidArgumentError(absl::StrCat(
        "target: \"", text, "\" does not begin with class=cpu or class=gpu"));
  Target t = words[0].second == "gpu" ? Target::ReferenceGpu() : Target::ReferenceCpu();
  // keys left out keep the reference's values, except the lists
  t.features.clear();
  t.matrix_units.clear();
  for (size_t i = 1; i < words.size(); ++i) {
    const auto [key, value] = words[i];
    bool ok = true;
    if (key == "arch") {
      t.arch = std::string(value);
      ok = !value.empty();
    } else if (key == "features") {
      for (absl::string_view f : absl::StrSplit(value, ',', absl::SkipEmpty()))
        t.features.emplace_back(f);
      std::sort(t.features.begin(), t.features.end());
    } else if (key == "vector_bits") {
      ok = ParseCount(value, &t.vector_bits);
    } else if (key == "registers") {
      ok = ParseCount(value, &t.registers);
    } else if (key == "cores") {
      ok = ParseCount(value, &t.cores);
    } else if (key == "l1d") {
      std::vector<absl::string_view> sw = absl::StrSplit(value, '/');
      ok = sw.size() == 2 && ParseSize(sw[0], &t.l1d_bytes) && ParseCount(sw[1], &t.l1d_ways);
    } else if (key == "l2") {
      ok = ParseSize(value, &t.l2_bytes);
    } else if (key == "l3") {
      ok = ParseSize(value, &t.l3_bytes);
    } else if (key == "warp") {
      ok = ParseCount(value, &t.warp);
    } else if (key == "threads_per_block") {
      ok = ParseCount(value, &t.threads_per_block);
    } else if (key == "shared_per_block") {
      ok = ParseSize(value, &t.shared_per_block);
    } else if (key == "matrix") {
      for (absl::string_view m : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        absl::StatusOr<MatrixUnit> u = ParseMatrixUnit(m);
        if (!u.ok()) return u.status();
        t.matrix_units.push_back(*u);
      }
    } else if (key == "kernels") {
      for (absl::string_view k : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        absl::StatusOr<SuppliedKernel> sk = ParseSuppliedKernel(k);
        if (!sk.ok()) return sk.status();
        t.kernels.push_back(*std::move(sk));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "target: unknown key \"", key,
          "\" (expected arch, features, vector_bits, registers, "
          "cores, l1d, l2, l3, warp, threads_per_block, shared_per_block, matrix or kernels)"));
    }
    if (!ok)
      return absl::InvalidArgumentError(
          absl::StrCat("target: \"", key, "=", value, "\" is not a valid value for ", key));
  }
  return t;
}

}  // namespace uopc
